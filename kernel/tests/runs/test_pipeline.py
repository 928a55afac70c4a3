"""The run pipeline end to end on the real engine (SQLite stores, the local sandbox provider,
core-steps): the run document names its front end and runner, the observer sees the result
once, and a run and a resume of its instance end with the same exit code."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

from agent_env.runs.pipeline import RunObserver, RunPipeline, RunResult, exit_code
from agent_env.runs.request import RunRequest

HELLO = Path(__file__).resolve().parents[2] / "src" / "agent_env" / "hello_bundle" / "hello"


class Seen(RunObserver):
    def __init__(self) -> None:
        self.notices: list[str] = []
        self.results: list[RunResult] = []

    def notice(self, line: str) -> None:
        self.notices.append(line)

    def finished(self, result: RunResult) -> None:
        self.results.append(result)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("AGENT_ENV_HOME", str(home))
    monkeypatch.delenv("AGENT_ENV_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    return home


def bundle(tmp_path: Path, says: str) -> Path:
    """hello with a greeting that says `says` (`Hello` passes, anything else scores 0.5)."""
    root = tmp_path / f"hello-{says.lower()}"
    shutil.copytree(HELLO, root)
    (root / "artifacts" / "greeting" / "greeting.txt").write_text(f"{says}, world\n")
    return root


async def run(request: RunRequest, observer: RunObserver | None = None) -> tuple[Any, Any]:
    from agent_env.engine.records import RUNS
    from agent_env.engine.run import Session

    session = await Session.open()
    try:
        result = await RunPipeline(session, observer).run(request)
        doc = await session.stores.documents.get(RUNS, result.run_id)
        return result, doc
    finally:
        await session.close()


def test_a_run_is_recorded_with_its_front_end_and_shown_once(home, tmp_path):
    seen = Seen()
    request = RunRequest(spec=str(bundle(tmp_path, "Hello")), trials=2, front_end="testing")
    result, doc = anyio.run(run, request, seen)
    assert result.exit_code == 0 and seen.results == [result]
    assert (doc["front_end"], doc["runner"], doc["trials"]) == ("testing", "local", 2)
    assert result.summary["tasks"][0]["passed"] == 2
    assert any(line.startswith("task hello: v1") for line in seen.notices), seen.notices


def test_a_run_and_a_resume_of_its_instance_share_one_exit_code_rule(home, tmp_path):
    request = RunRequest(spec=str(bundle(tmp_path, "Goodbye")))
    result, _ = anyio.run(run, request)
    [record] = result.records
    assert record["status"] == "scored_below"
    assert result.exit_code == 1
    seen = Seen()
    resumed, _ = anyio.run(run, attrs.evolve(request, spec=None, resume=record["id"]), seen)
    assert resumed.exit_code == result.exit_code == 1
    assert [r["id"] for r in resumed.records] == [record["id"]]
    assert any("already finished" in line for line in seen.notices), seen.notices


def test_the_exit_code_rule():
    def summary(failures: dict[str, int], excluded: dict[str, int]) -> dict[str, Any]:
        return {"tasks": [{"failures": failures, "excluded": excluded}]}

    assert exit_code(summary({}, {})) == 0
    assert exit_code(summary({"unscored": 2}, {"cancelled": 1})) == 0
    assert exit_code(summary({"verifier": 1}, {})) == 1
    assert exit_code(summary({}, {"infrastructure": 1})) == 1
    assert exit_code(summary({}, {}), [15]) == 143
    assert exit_code(summary({"verifier": 1}, {}), [2]) == 130
