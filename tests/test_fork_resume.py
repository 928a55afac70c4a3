"""A child of a fork killed before its restore, resumed with `agent-env run --resume RUN`,
still restores the snapshot (its record's `forked_from` brings the snapshot back) instead of
taking a snapshot of its own."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("fork_bench", REPO / "bench" / "_fork.py")
assert _spec is not None and _spec.loader is not None
fork_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fork_bench)
AGENT_ENV = str(Path(sys.executable).parent / "agent-env")

#: Starts CLI processes and whole episodes: out of the inner loop (`scripts/test --inner`).
pytestmark = pytest.mark.slow

#: The counter, held at start-up while the flag file exists (the child is killed meanwhile).
HELD = fork_bench.COUNTER.replace(
    'if __name__ == "__main__":\n',
    'if __name__ == "__main__":\n'
    "    import os, time\n"
    '    while os.path.exists(os.environ.get("HOLD_FLAG", "/nonexistent")):\n'
    "        time.sleep(0.05)\n",
)
TASK = [
    {"id": "notes", "type": "deploy_env", "env_id": "notes"},
    {"id": "counter", "type": "deploy_env", "env_id": "counter", "depends_on": ["notes"]},
    {"id": "snap", "type": "snapshot_task", "snapshot_id": "resumable"},
]


def cli(home: Path, *args: str, **kw: Any) -> Any:
    env = {**os.environ, "AGENT_ENV_HOME": str(home), "HOLD_FLAG": str(home.parent / "hold")}
    return subprocess.run([AGENT_ENV, *args], env=env, capture_output=True, text=True, **kw)


async def _children(home: Path) -> list[dict[str, Any]]:
    """The fork's child records, each with `journaled`: the steps its journal has finished."""
    from agent_env.engine.journal import Journal
    from agent_env.engine.records import COLLECTION
    from agent_env.engine.run import Session

    os.environ["AGENT_ENV_HOME"] = str(home)
    session = await Session.open()
    try:
        rows = await session.stores.documents.list(COLLECTION)
        found = [doc for _, doc in rows if doc.get("forked_from")]
        for doc in found:
            _, entries = await Journal.open(session.stores.documents, doc["id"])
            doc["journaled"] = [e.get("step_id") for e in entries if e.get("kind") == "step"]
        return found
    finally:
        await session.close()


def test_a_resumed_child_restores_the_snapshot(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = fork_bench.write_bundle(tmp_path / "bundle", {"t": TASK})
    (root / "envs/counter/server.py").write_text(HELD)
    parent = cli(home, "run", str(root), "--json", timeout=300)
    assert parent.returncode == 0, parent.stderr
    digest = json.loads(parent.stdout)["tasks"][0]["outputs"]["snap"]["digest"]

    hold = tmp_path / "hold"
    hold.write_text("held")
    env = {**os.environ, "AGENT_ENV_HOME": str(home), "HOLD_FLAG": str(hold)}
    child = subprocess.Popen(
        [AGENT_ENV, "run", str(root), "--from-snapshot", "resumable"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while True:  # killed once the notes env is up and the counter is being deployed
            found = anyio.run(_children, home)
            if found and found[0]["journaled"] == ["notes"]:
                break
            assert time.monotonic() < deadline, found
            time.sleep(0.2)
        time.sleep(0.5)  # the counter's deploy is under way
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    hold.unlink()
    (stuck,) = anyio.run(_children, home)
    assert stuck["status"] == "running" and stuck["forked_from"] == "resumable@1"

    resumed = cli(home, "run", "--resume", stuck["run_id"], "--json", timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    (record,) = [t for t in json.loads(resumed.stdout)["tasks"] if t.get("forked_from")]
    assert record["outputs"]["snap"] == {
        "forked_from": "resumable@1",
        "digest": digest,
        "restored_digest": digest,
    }
    versions = cli(home, "run", str(root), "--from-snapshot", "resumable@2", timeout=120)
    assert "snapshot 'resumable' has no version 2 (it has v1)" in versions.stderr
