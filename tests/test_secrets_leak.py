"""A 4-character secret set in the secret store and used by a step is found in no file under
the state and cache folders, in no `--json` output, `runs show` or `runs export`, after a run
and after a SIGKILL of the controller mid-step."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

PIN = "q7Zx"
SCRIPT = """import os, sys, time
def run(data):
    pin = os.environ["AGENT_ENV_SECRET_PIN"]
    print("the pin is", pin)
    print("stderr pin", pin, file=sys.stderr)
    marker = (data.get("args") or {}).get("marker")
    if marker:
        open(marker, "w").write("started")
        time.sleep(5)
    return {"pin": pin, "note": f"used {pin} here", "nested": [{"x": pin}]}
"""
AGENT_ENV = str(Path(__import__("sys").executable).with_name("agent-env"))


def _bundle(root: Path, args: dict) -> Path:
    (root / "tasks").mkdir(parents=True)
    (root / "artifacts" / "leak").mkdir(parents=True)
    (root / "artifacts" / "leak" / "leak.py").write_text(SCRIPT)
    steps = [
        {
            "id": "box",
            "type": "deploy_sandbox",
            "sandbox_name": "main",
            "sandbox_mode": "vm",
            "sandbox_type": "local",
        },
        {
            "id": "use",
            "type": "run_code",
            "script_artifact_id": "leak",
            "result_id": "used",
            "sandbox_name": "main",
            "args": args,
        },
    ]
    (root / "tasks" / "t.json").write_text(json.dumps(steps))
    return root


@pytest.fixture
def env(tmp_path):
    e = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    e.update(
        AGENT_ENV_HOME=str(tmp_path / "home"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        AGENT_ENV_SECRET_PIN=PIN,
        # the steps read the pin from the host's environment and mark a host file, which an
        # isolated sandbox cannot: what is tested here is the redaction of what they print
        AGENT_ENV_SANDBOX_LOCAL_BWRAP="",
    )
    return e


def _cli(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([AGENT_ENV, *args], env=env, capture_output=True, text=True, timeout=120)


def _leaks(tmp_path: Path, *texts: str) -> list[str]:
    found = [t[:80] for t in texts if PIN in t]
    for folder in (tmp_path / "home", tmp_path / "cache"):
        for path in folder.rglob("*") if folder.exists() else ():
            if path.is_file() and PIN.encode() in path.read_bytes():
                found.append(str(path))
    return found


def _private_logs(tmp_path: Path) -> list[str]:
    return [
        f"{p}: {oct(p.stat().st_mode & 0o777)}"
        for p in (tmp_path / "home").rglob("*.log")
        if p.stat().st_mode & 0o077
    ]


def _run_until_started(env, bundle: Path, marker: Path, timeout: float) -> subprocess.Popen:
    """`agent-env run BUNDLE`, running, once its step wrote `marker`."""
    proc = subprocess.Popen(
        [AGENT_ENV, "run", str(bundle)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + timeout
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the step never started"
        time.sleep(0.05)
    return proc


def test_a_short_secret_reaches_no_file_and_no_output(env, tmp_path):
    bundle = _bundle(tmp_path / "b", {})
    ran = _cli(env, "run", str(bundle), "--json")
    assert ran.returncode == 0, ran.stderr
    record = json.loads(ran.stdout)
    shown = _cli(env, "runs", "show", record["tasks"][0]["id"], "--json")
    export = _cli(env, "runs", "export", record["run_id"])
    assert shown.returncode == 0 and export.returncode == 0, shown.stderr + export.stderr
    stored = b"".join(p.read_bytes() for p in (tmp_path / "home").rglob("*") if p.is_file())
    assert b"used [redacted] here" in stored  # the step's result was persisted, masked
    texts = (ran.stdout, ran.stderr, shown.stdout, shown.stderr, export.stdout, export.stderr)
    assert _leaks(tmp_path, *texts) == []
    assert _private_logs(tmp_path) == []


def test_a_short_secret_reaches_no_file_after_a_sigkill_mid_step(env, tmp_path):
    marker = tmp_path / "started"
    bundle = _bundle(tmp_path / "b", {"marker": str(marker)})
    proc = _run_until_started(env, bundle, marker, 60)
    os.kill(proc.pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=10)
    assert _leaks(tmp_path, out, err) == []
    assert _private_logs(tmp_path) == []


CHATTY = """
import os
import sys
import threading
import time

from agentenv_protocol import AgentEnvEnvironment, environment_card, tool


def chatter():
    pin = os.environ["AGENT_ENV_SECRET_PIN"]
    while True:  # the pin split over two writes: a copy that redacted per write would leak it
        try:
            sys.stdout.write("env says pin=" + pin[:2])
            sys.stdout.flush()
            time.sleep(0.02)
            sys.stdout.write(pin[2:] + " and more\\n")
            sys.stdout.flush()
            print("on stderr", pin, file=sys.stderr, flush=True)
        except OSError:  # nobody reads the output (the runner died): like a logging handler
            pass
        time.sleep(0.03)


@environment_card(name="chatty")
class Chatty(AgentEnvEnvironment):
    @tool()
    def ping(self) -> str:
        \"\"\"Answer pong.\"\"\"
        return "pong"


if __name__ == "__main__":
    threading.Thread(target=chatter, daemon=True).start()
    Chatty().serve()
"""


def _chatty_bundle(tmp_path: Path, marker: Path) -> Path:
    bundle = _bundle(tmp_path / "b", {"marker": str(marker)})
    (bundle / "envs" / "chatty").mkdir(parents=True)
    (bundle / "envs" / "chatty" / "env.toml").write_text(
        'command = ["python", "server.py"]\nrequirements = []\n'
    )
    (bundle / "envs" / "chatty" / "server.py").write_text(CHATTY)
    steps = json.loads((bundle / "tasks" / "t.json").read_text())
    deploy = {"id": "env", "type": "deploy_env", "env_id": "chatty", "sandbox_type": "local"}
    (bundle / "tasks" / "t.json").write_text(json.dumps([deploy, *steps]))
    return bundle


def _scan_while_running(tmp_path: Path, proc: subprocess.Popen, scans: int = 10) -> int:
    """Scan every file for the pin `scans` times, 0.2 s apart, while `proc` runs; the most
    masked lines seen in one env log."""
    masked = 0
    for _ in range(scans):  # the env keeps printing while we look
        assert _leaks(tmp_path) == []
        logs = list((tmp_path / "home").rglob("proc-*.log"))
        masked = max([p.read_bytes().count(b"pin=[redacted] and more") for p in logs], default=0)
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before the scans did"
    return masked


def test_an_env_printing_a_secret_never_writes_it_to_disk_even_while_running(env, tmp_path):
    """The env server prints the pin over and over (split across writes, on stdout and
    stderr) from the moment it starts; its log under the state folder fills with the masked
    lines while the run is still going, and at no moment (scanned repeatedly mid-run, then
    after a SIGKILL) does any file hold the pin."""
    marker = tmp_path / "started"
    bundle = _chatty_bundle(tmp_path, marker)
    proc = _run_until_started(env, bundle, marker, 90)
    try:
        assert _scan_while_running(tmp_path, proc) >= 5, "the env's log was not written"
        assert _private_logs(tmp_path) == []
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=10)
    assert _leaks(tmp_path, out, err) == []


def test_a_resume_that_adopts_the_env_goes_on_writing_its_log_redacted(env, tmp_path):
    """Watchdog off: the run is SIGKILLed mid-step, the env server outlives it (its writes
    fail meanwhile rather than reach the disk); `--resume` adopts the env and drains its
    output again: the log grows with masked lines while the resumed run goes on, the pin is in
    no file at any scan, and nothing is left at the end."""
    env = {**env, "AGENT_ENV_WATCHDOG": "0"}
    marker = tmp_path / "started"
    bundle = _chatty_bundle(tmp_path, marker)
    proc = _run_until_started(env, bundle, marker, 90)
    assert _scan_while_running(tmp_path, proc, 3) >= 1
    os.kill(proc.pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=10)
    [log] = list((tmp_path / "home").rglob("proc-*.log"))
    before = log.read_bytes().count(b"pin=[redacted] and more")
    # read the store directly: any agent-env command would reap what the dead run left
    with sqlite3.connect(tmp_path / "home" / "documents.sqlite3") as db:
        [(run_id,)] = db.execute("SELECT key FROM documents WHERE collection = 'runs'").fetchall()
    marker.unlink()
    resumed = subprocess.Popen(
        [AGENT_ENV, "run", "--resume", run_id],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert resumed.poll() is None, resumed.communicate()
            assert time.monotonic() < deadline, "the resumed step never started"
            time.sleep(0.05)
        _scan_while_running(tmp_path, resumed, 5)
        after = log.read_bytes().count(b"pin=[redacted] and more")
        assert after >= before + 5, (before, after)  # the same env's log, drained again
    finally:
        rout, rerr = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, rerr
    assert "fenced sandbox 'main'" in rerr or "resuming" in rerr
    assert _leaks(tmp_path, out, err, rout, rerr) == []
    assert not [
        p for p in (tmp_path / "home" / "sandboxes").iterdir() if not p.name.startswith(".")
    ]
