"""A run killed after a trigger fired resumes with the env clock and the fired-trigger state:
the fired trigger does not fire again, the pending one fires on the re-armed clock."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from clock_envs import FILES, caller  # noqa: E402

AGENT_ENV = Path(sys.executable).with_name("agent-env")


def note(tid: str, when: dict) -> dict:
    return {
        "id": tid,
        "when": {"type": "time", **when},
        "actions": [{"type": "tool", "tool": "add_note", "args": {"title": tid}}],
    }


STEPS = [
    {"id": "deploy", "type": "deploy_env", "env_id": "notes"},
    {
        "id": "clock",
        "type": "sync_env_clock",
        "env_id": "notes",
        "virtual_time": "2026-03-09T08:00:00Z",
        "virtual_seconds_per_real_second": 3600,  # 1 real second = 1 virtual hour
    },
    {
        "id": "arm",
        "type": "register_env_triggers",
        "env_id": "notes",
        "triggers": [note("first", {"at": "PT1H"}), note("second", {"at": "PT6H"})],
        "await_fired": ["first"],
        "await_timeout_seconds": 30,
    },
    {"id": "work", "type": "run_code", "script_artifact_id": "nap"},
    {
        "id": "after",
        "type": "register_env_triggers",
        "env_id": "notes",
        "triggers": [note("third", {"after": "second"})],
        "await_fired": ["third"],
        "await_timeout_seconds": 30,
    },
    {
        "id": "count",
        "type": "env_outcome_verifier",
        "env_id": "notes",
        "file_artifact_id": "count",
        "verifier_id": "count",
    },
]


def run(home: Path, *args: str, watchdog: str = "0", **popen) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    env["AGENT_ENV_HOME"] = str(home)
    env["AGENT_ENV_WATCHDOG"] = watchdog
    return subprocess.Popen(
        [str(AGENT_ENV), "run", *args, "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **popen,
    )


@pytest.mark.parametrize("watchdog", ["0", "1"])
def test_a_killed_run_resumes_with_the_clock_and_fired_triggers(tmp_path, watchdog):
    """Watchdog off: the resume adopts the env the killed run left (its state holds the first
    trigger's write) and restores the clock and the fired-trigger state onto it. On: the
    watchdog reaped the env, the resume deploys it anew and the snapshot is not restored onto
    the fresh env (its triggers start over), so each trigger still writes exactly once."""
    bundle, home = tmp_path / "bundle", tmp_path / "home"
    files = {
        **FILES,
        "tasks/t.json": json.dumps(STEPS),
        "artifacts/nap/nap.py": "import time\ndef run(input):\n    time.sleep(3)\n",
        "artifacts/count/count.py": caller([("count_writes", {})]),
    }
    for rel, text in files.items():
        (bundle / rel).parent.mkdir(parents=True, exist_ok=True)
        (bundle / rel).write_text(text)
    first = run(home, str(bundle), watchdog=watchdog)
    snapshots = home / "triggers"
    try:
        deadline = time.monotonic() + 120
        while True:  # kill the runner once `first` fired and `second` has not
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first trigger never fired"
            found = list(snapshots.glob("*.json")) if snapshots.exists() else []
            if found:
                statuses = {
                    t["spec"]["id"]: t["status"]
                    for t in json.loads(found[0].read_text() or "{}").get("triggers", [])
                }
                if statuses.get("first") == "fired":
                    assert statuses["second"] != "fired"
                    break
            time.sleep(0.05)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
        first.communicate()
    with sqlite3.connect(home / "documents.sqlite3") as db:
        [(run_id,)] = db.execute("SELECT key FROM documents WHERE collection = 'runs'").fetchall()
    resumed = run(home, "--resume", run_id, watchdog=watchdog)
    out, err = resumed.communicate(timeout=300)
    [record] = json.loads(out)["tasks"]
    assert record["status"] == "passed", record["outcome"] + "\n" + err
    assert record["resumes"] == 1
    [writes] = [r["description"] for r in record["verifiers"]["count"]["results"]]
    assert json.loads(writes) == {"first": 1, "second": 1, "third": 1}
    if watchdog == "0":
        assert "trigger(s) restored; already fired: first" in err
    else:
        assert "trigger state not restored: its envs were deployed anew" in err
        assert "restored; already fired" not in err
    assert not list(snapshots.glob("*.json"))  # forgotten when the instance ended


def test_a_restored_time_trigger_keeps_its_mark_and_a_cut_off_firing_fires_again():
    from agentenv_protocol.gateway.clock import EnvClock
    from agentenv_protocol.gateway.triggers.engine import TriggerEngine, wait_for

    clock = EnvClock()
    clock.set_time("2026-03-09T08:00:00Z", 0)
    engine = TriggerEngine(clock)
    try:
        engine.register({"triggers": [note("later", {"at": "PT6H"})]})
        engine.wake()
        deadline = time.monotonic() + 10
        while engine.state()["triggers"][0]["next_mark"] is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        snapshot = engine.snapshot()
    finally:
        engine.stop()
    assert snapshot["triggers"][0]["next_mark"] == "2026-03-09T14:00:00Z"
    # the resumed run re-arms the clock two virtual hours later: the mark stays at t0 + 6h
    clock = EnvClock()
    clock.set_time("2026-03-09T10:00:00Z", 0)
    restored = TriggerEngine(clock)
    try:
        restored.restore(snapshot)
        restored.wake()
        time.sleep(0.2)
        assert restored.state()["triggers"][0]["next_mark"] == "2026-03-09T14:00:00Z"
        assert restored.state()["triggers"][0]["status"] == "armed"
    finally:
        restored.stop()
    cut_off = json.loads(json.dumps(snapshot))
    cut_off["triggers"][0].update(status="firing", marks=1, next_mark=None)
    again = TriggerEngine(clock)  # not bound to a gateway: the re-run action fails visibly
    try:
        again.restore(cut_off)
        state = wait_for(again, lambda s: s["triggers"][0]["status"] == "failed", 10)
        (failed,) = [e for e in state["events"] if e["kind"] == "failed"]
        assert failed["resumed"] is True  # the cut-off firing ran again after the restore
    finally:
        again.stop()
