"""A server killed (SIGKILL) the moment it answered an episode's end loses nothing of that
episode: its record and its trajectory object are stored and readable by another process, though
the object store fsyncs folders behind (`agent_env.stores.filesystem`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

ROOT = Path(__file__).resolve().parents[3]
NOTES = ROOT / "examples" / "notes-agent"
AGENT_ENV = str(Path(sys.executable).parent / "agent-env")


@pytest.mark.timeout(300)
def test_a_server_killed_right_after_end_turn_kept_the_record_and_trajectory(
    openenv_home: Path,
) -> None:
    from openenv.core.generic_client import GenericEnvClient

    proc = subprocess.Popen(
        [AGENT_ENV, "openenv", "serve", str(NOTES), "--port", "0", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
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
        subprocess.run([AGENT_ENV, "sandbox", "prune"], capture_output=True, timeout=120)
    shown = subprocess.run(
        [AGENT_ENV, "runs", "show", ended["instance_id"], "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    record = json.loads(shown.stdout)["instance"]
    # the episode did nothing, so the verifiers scored it 0: finished and scored, not running
    assert record["status"] == ended["status"] == "scored_below", shown.stdout
    assert record["scores"] and record["finished_at"], shown.stdout
    keys = [o["trajectory"] for o in record["outputs"].values() if o.get("trajectory")]
    assert len(keys) == 1, record["outputs"]
    trajectory = json.loads((openenv_home / "objects" / keys[0]).read_text())
    assert trajectory["response"] == "ok" and trajectory["events"][-1]["content"] == "ok"
