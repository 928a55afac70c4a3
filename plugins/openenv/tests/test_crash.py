"""A server killed (SIGKILL) the moment it answered an episode's end loses nothing of that
episode: its record and its trajectory object are stored and readable by another process, though
the object store fsyncs the object and its folder behind (`fsync = "behind"`, the default of
`agent_env.stores.filesystem`). What "behind" can lose, a power loss before those fsyncs, leaves
a record naming an empty or torn trajectory: every reader reports that, none fails on it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

ROOT = Path(__file__).resolve().parents[3]
NOTES = ROOT / "examples" / "notes-agent"
AGENT_ENV = str(Path(sys.executable).parent / "agent-env")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AGENT_ENV, *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def killed(openenv_home: Path) -> dict[str, Any]:
    """The end_turn metadata of an episode whose server was SIGKILLed as it answered."""
    from openenv.core.generic_client import GenericEnvClient

    with (openenv_home / "serve.err").open("w") as err:  # read by the no-token test
        proc = subprocess.Popen(
            [AGENT_ENV, "openenv", "serve", str(NOTES), "--port", "0", "--json"],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        url = json.loads(proc.stdout.readline())["url"]

        async def episode() -> dict:
            async with GenericEnvClient(base_url=url, message_timeout_s=240) as env:
                r = await env.reset(split="all", index=0)
                assert r.done is False, r.metadata
                end = await env.step(
                    {"type": "call_tool", "tool_name": "end_turn", "arguments": {"response": "ok"}}
                )
                os.kill(proc.pid, signal.SIGKILL)  # no shutdown: nothing is flushed or waited for
                assert end.done is True, end
                return end.metadata

        ended = anyio.run(episode)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _cli("sandbox", "prune")
    return ended


def _trajectory_key(record: dict[str, Any]) -> str:
    keys = [o["trajectory"] for o in record["outputs"].values() if o.get("trajectory")]
    assert len(keys) == 1, record["outputs"]
    return keys[0]


@pytest.mark.timeout(300)
def test_a_server_killed_right_after_end_turn_kept_the_record_and_trajectory(
    openenv_home: Path, killed: dict[str, Any]
) -> None:
    shown = _cli("runs", "show", killed["instance_id"], "--json")
    record = json.loads(shown.stdout)["instance"]
    # the episode did nothing, so the verifiers scored it 0: finished and scored, not running
    assert record["status"] == killed["status"] == "scored_below", shown.stdout
    assert record["scores"] and record["finished_at"], shown.stdout
    trajectory = json.loads((openenv_home / "objects" / _trajectory_key(record)).read_text())
    assert trajectory["response"] == "ok" and trajectory["events"][-1]["content"] == "ok"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kept", [0, 0.5], ids=["empty", "torn"])
def test_a_trajectory_lost_to_a_power_loss_is_reported_by_runs_show_and_export(
    openenv_home: Path, killed: dict[str, Any], kept: float
) -> None:
    shown = _cli("runs", "show", killed["instance_id"], "--json")
    record = json.loads(shown.stdout)["instance"]
    path = openenv_home / "objects" / _trajectory_key(record)
    whole = path.read_bytes()
    try:
        # what a power loss before the object's fsync leaves: the name, not all the bytes
        path.write_bytes(whole[: int(len(whole) * kept)])
        shown = _cli("runs", "show", killed["instance_id"], "--json")
        assert shown.returncode == 0, shown.stderr
        (reported,) = json.loads(shown.stdout)["trajectories"].values()
        expected = "is empty (0 bytes)" if kept == 0 else f"is torn ({len(whole) // 2} bytes"
        assert expected in reported["missing"], reported
        assert "power loss" in reported["missing"]
        exported = _cli("runs", "export", killed["run_id"], "--format", "chat-jsonl")
        assert exported.returncode == 0, exported.stderr
        (row,) = [json.loads(line) for line in exported.stdout.splitlines()]
        assert row["instance_id"] == killed["instance_id"], row
        # the conversation keeps the prompt and the answer the record holds
        assert row["messages"][-1] == {"role": "assistant", "content": "ok"}, row
        listed = _cli("runs", "show", killed["instance_id"])  # the human view still shows it
        assert listed.returncode == 0 and killed["instance_id"] in listed.stdout, listed.stderr
    finally:
        path.write_bytes(whole)


def test_a_server_without_a_token_says_who_can_reach_it(
    openenv_home: Path, killed: dict[str, Any]
) -> None:
    from agentenv_openenv.cli import NO_TOKEN_WARNING

    said = (openenv_home / "serve.err").read_text()
    assert NO_TOKEN_WARNING in said and "a bearer token is required" not in said, said
