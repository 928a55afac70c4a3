"""Red team on the `local` provider: a hostile bundle agent, run through `agent-env run`, tries
every attack of `redteam_agent.py` from its sandbox (bubblewrap); none may succeed, its report
may hold neither the host's secret nor the answer key, and the run may not pass.

The same agent run where bubblewrap is missing is refused (an oracle still runs), and with
`--allow-unisolated` its attacks succeed: the control that shows the attacks have teeth.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import agent_env  # noqa: E402
from redteam_support import ATTACKS, report_of, task_record, write_bundle  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")

HOST_SECRET = "host-secret-" + secrets.token_hex(12)
ANSWER = "answer-" + secrets.token_hex(12)
PROBE = "agentenv-redteam-" + secrets.token_hex(6)
MISSING = {"AGENT_ENV_SANDBOX_LOCAL_BWRAP": "/nonexistent/bwrap"}


class Attacked:
    """One run of the bundle: its JSON summary, stderr, and the files it must leave alone."""

    def __init__(self, root: Path, name: str, *args: str, env: dict[str, str] | None = None):
        self.home = root / f"home-{name}"
        self.bundle = write_bundle(
            root / f"bundle-{name}",
            ANSWER,
            {"RT_HOME": str(self.home), "RT_BUNDLE": str(root / f"bundle-{name}"),
             "RT_HOST_TMP_PROBE": f"{PROBE}-{name}"},
            provider="local",
        )  # fmt: skip
        self.verifier_digest = _digest(self.bundle / "artifacts" / "check" / "check.py")
        done = agent_env(
            self.home,
            "run",
            str(self.bundle),
            *args,
            "--json",
            env={"AGENT_ENV_SECRET_REDTEAM": HOST_SECRET, **(env or {})},
        )
        self.probe = Path("/tmp") / f"{PROBE}-{name}"
        self.code, self.stderr = done.returncode, done.stderr
        try:
            self.data = json.loads(done.stdout)
        except ValueError:
            raise AssertionError(f"exit {done.returncode}\n{done.stdout}\n{done.stderr}") from None

    def task(self, name: str) -> dict:
        return task_record(self.data, name)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def isolated(tmp_path_factory) -> Attacked:
    return Attacked(tmp_path_factory.mktemp("redteam"), "isolated", "--task", "attack")


@pytest.fixture(scope="module")
def report(isolated) -> dict:
    record = isolated.task("attack")
    assert record["steps"]["ask"]["status"] == "completed", isolated.stderr
    return report_of(record)


def test_every_attack_was_tried(report):
    assert sorted(report) == sorted(ATTACKS)
    assert len(ATTACKS) >= 20


@pytest.mark.parametrize("attack", ATTACKS)
def test_the_attack_fails_in_an_isolated_sandbox(report, attack):
    row = report[attack]
    assert row["ok"] is False, f"{attack} succeeded: {row['got']}"


def test_nothing_the_agent_read_holds_the_host_secret_or_the_answer(report):
    everything = json.dumps(report)
    assert HOST_SECRET not in everything
    assert ANSWER not in everything


def test_the_agents_files_do_not_become_its_reward(isolated):
    record = isolated.task("attack")
    assert record["status"] == "scored_below", record["outcome"]
    assert record["verifiers"]["answer"]["score"] == 0.0


def test_the_host_is_untouched(isolated):
    assert not isolated.probe.exists(), "the sandbox's /tmp is the host's"
    for path in ("/usr/bin/agentenv-redteam", "/etc/agentenv-redteam", "/opt/agentenv-redteam"):
        assert not Path(path).exists()
    assert _digest(isolated.bundle / "artifacts" / "check" / "check.py") == isolated.verifier_digest
    assert "not isolated" not in isolated.stderr


@pytest.fixture(scope="module")
def unisolated(tmp_path_factory) -> Attacked:
    """bubblewrap 'missing' (config points at no file): the hostile agent is refused, the
    oracle runs."""
    return Attacked(tmp_path_factory.mktemp("redteam"), "missing", env=MISSING)


def test_without_bubblewrap_an_untrusted_agent_is_refused(unisolated):
    record = unisolated.task("attack")
    assert record["status"] != "passed"
    assert record["steps"]["agent"]["status"] == "failed"
    assert "ask" not in record["steps"] or record["steps"]["ask"]["status"] != "completed"
    message = json.dumps(record)
    assert "untrusted and local sandboxes cannot be isolated here" in message
    assert "--allow-unisolated" in message
    assert unisolated.code == 1


def test_without_bubblewrap_the_oracle_still_runs(unisolated):
    assert unisolated.task("solve")["status"] == "passed", unisolated.task("solve")["outcome"]


def test_without_bubblewrap_the_user_is_told_once(unisolated):
    assert unisolated.stderr.count("local sandboxes are NOT isolated") == 1, unisolated.stderr
    assert "'/nonexistent/bwrap') is not on PATH" in unisolated.stderr


def test_allow_unisolated_runs_the_agent_and_its_attacks_succeed(tmp_path_factory):
    """The control: the same agent outside bubblewrap reads the stores, the host's secret and
    other processes, so the isolated run's zero is bubblewrap's doing."""
    run = Attacked(
        tmp_path_factory.mktemp("redteam"),
        "allowed",
        "--task",
        "attack",
        "--allow-unisolated",
        env=MISSING,
    )
    got = report_of(run.task("attack"))
    won = {name for name, row in got.items() if row["ok"]}
    assert {
        "home_listing",
        "documents_store",
        "documents_store_relative",
        "object_store",
        "other_sandboxes",
        "own_environment",
        "proc_environ",
        "foreign_processes",
        "shared_tmp",
    } <= won | {"shared_tmp"} and run.probe.exists(), json.dumps(got, indent=1)[:4000]
    assert HOST_SECRET in json.dumps(got)
    assert ANSWER in json.dumps(got)
    run.probe.unlink(missing_ok=True)
