"""`agent-env run` as a real process: SIGKILL then `--resume`, Ctrl-C and SIGTERM teardown."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_run_cli import FIXTURES, alive, nothing_left, stored, write_bundle  # noqa: E402

LAUNCH = FIXTURES / "launch.py"


def slow_task(trace: Path, release: Path) -> list:
    t = str(trace)
    return [
        {"id": "box", "type": "t_box", "trace": t},
        {"id": "write", "type": "t_write", "path": "/app/out.txt", "text": "hi", "trace": t},
        {"id": "wait", "type": "t_wait", "release": str(release), "trace": t},
        {
            "id": "check",
            "type": "t_check",
            "verifier_id": "check",
            "path": "/app/out.txt",
            "text": "hi",
            "trace": t,
        },
    ]


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    e = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    e["AGENT_ENV_HOME"] = str(home)
    # the sandboxes of a SIGKILLed run must outlive it here (a resume adopts them, the next
    # command reaps them): no watchdog, which would tear them down within a second
    e["AGENT_ENV_WATCHDOG"] = "0"
    return {"env": e, "home": home, "cwd": tmp_path}


def start(env, *args) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(LAUNCH), *args],
        env=env["env"],
        cwd=env["cwd"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(env, *args, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run `agent-env ARGS` to completion in the test's home; its output captured."""
    return subprocess.run(
        [sys.executable, str(LAUNCH), *args],
        env=env["env"],
        cwd=env["cwd"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def start_and_wait_in_step(env, tmp_path):
    trace, release = tmp_path / "trace.txt", tmp_path / "release"
    bundle = write_bundle(tmp_path / "bundle", {"slow": slow_task(trace, release)})
    proc = start(env, "run", str(bundle))
    wait_for(lambda: "wait" in lines(trace) or proc.poll() is not None)
    assert proc.poll() is None, proc.communicate()
    [record] = stored(env["home"], "task_instances")
    return proc, record, trace, release


def test_sigkill_then_resume_finishes_without_rerunning_completed_steps(env, tmp_path):
    proc, record, trace, release = start_and_wait_in_step(env, tmp_path)
    proc.kill()
    proc.wait(timeout=10)
    journal = stored(env["home"], "journal")
    assert [e["step_id"] for e in journal] == ["box", "write"]
    pid = journal[0]["ops"][-1]["value"]["pid"]
    assert alive(pid), "the sandbox's server outlives a SIGKILL of agent-env"

    release.touch()
    done = finish(env, "run", "--resume", record["id"])
    assert done.returncode == 0, done.stderr
    assert "slow  passed (check: 1)" in done.stdout and record["id"] in done.stdout
    # box and write ran once; the wait step that was killed ran again, then check
    assert lines(trace) == ["box", "write", "wait", "wait", "check"]
    [final] = stored(env["home"], "task_instances")
    assert final["status"] == "passed" and final["resumes"] == 1
    assert not alive(pid)
    nothing_left(env["home"])


@pytest.mark.parametrize("command", [["config", "show"], ["plugin", "list"]])
def test_sigkill_then_any_command_reaps_what_the_dead_run_left(env, tmp_path, command):
    proc, record, trace, release = start_and_wait_in_step(env, tmp_path)
    proc.kill()
    proc.wait(timeout=10)
    pid = stored(env["home"], "journal")[0]["ops"][-1]["value"]["pid"]
    assert alive(pid)
    done = finish(env, *command)
    assert done.returncode == 0, done.stderr
    assert "reaped 1 sandbox(es) left by agent-env processes that died" in done.stderr
    assert not alive(pid)
    nothing_left(env["home"])


def test_resume_when_the_sandbox_is_gone_reruns_from_the_step_that_made_it(env, tmp_path):
    proc, record, trace, release = start_and_wait_in_step(env, tmp_path)
    proc.kill()
    proc.wait(timeout=10)
    pid = stored(env["home"], "journal")[0]["ops"][-1]["value"]["pid"]
    os.kill(pid, signal.SIGKILL)
    for path in (env["home"] / "sandboxes").iterdir():
        shutil.rmtree(path)
    release.touch()
    done = finish(env, "run", "--resume", record["id"], "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tasks"][0]["outcome"] == "passed (check: 1)"
    assert "sandbox 'box' is gone" in done.stderr
    assert lines(trace) == ["box", "write", "wait", "box", "write", "wait", "check"]
    nothing_left(env["home"])


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_and_sigterm_tear_down_and_record_cancelled(env, tmp_path, signum, code):
    proc, record, trace, release = start_and_wait_in_step(env, tmp_path)
    pid = stored(env["home"], "journal")[0]["ops"][-1]["value"]["pid"]
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert "slow  cancelled" in out
    [final] = stored(env["home"], "task_instances")
    assert final["status"] == "cancelled"
    assert final["steps"]["wait"]["status"] == "cancelled"
    assert not alive(pid)
    nothing_left(env["home"])


def test_keep_holds_sandboxes_until_ctrl_c(env, tmp_path):
    trace, release = tmp_path / "trace.txt", tmp_path / "release"
    release.touch()
    steps = [
        *slow_task(trace, release),
        {"id": "down", "type": "teardown_sandboxes", "sandbox_names": ["box"]},
    ]
    bundle = write_bundle(tmp_path / "bundle", {"slow": steps})
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "w") as err_file:
        proc = subprocess.Popen(
            [sys.executable, str(LAUNCH), "run", str(bundle), "--keep"],
            env=env["env"],
            cwd=env["cwd"],
            stdout=subprocess.PIPE,
            stderr=err_file,
            text=True,
        )
        wait_for(lambda: "keeping 1 sandbox" in err_path.read_text() or proc.poll() is not None)
        assert proc.poll() is None, err_path.read_text()
        pid = stored(env["home"], "journal")[0]["ops"][-1]["value"]["pid"]
        assert alive(pid)
        assert (env["home"] / "sandboxes").exists()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, err_path.read_text()
    assert "slow  passed (check: 1)" in out
    assert not alive(pid)
    nothing_left(env["home"])


def test_resume_a_whole_run_keeps_finished_instances(env, tmp_path):
    trace, release = tmp_path / "trace.txt", tmp_path / "release"
    quick = [
        {"id": "box", "type": "t_box"},
        {
            "id": "check",
            "type": "t_check",
            "verifier_id": "check",
            "path": "/app/none",
            "text": "x",
        },
    ]
    bundle = write_bundle(
        tmp_path / "bundle",
        {"quick": quick, "slow": slow_task(trace, release)},
        {"all": ["quick", "slow"]},
    )
    proc = start(env, "run", str(bundle), "--eval", "all")
    wait_for(lambda: "wait" in lines(trace) or proc.poll() is not None)
    wait_for(
        lambda: any(
            r["status"] != "running" and r["task"]["name"] == "quick"
            for r in stored(env["home"], "task_instances")
        )
    )
    proc.kill()
    proc.wait(timeout=10)
    [run] = stored(env["home"], "runs")
    assert len(run["instances"]) == 2
    release.touch()
    done = finish(env, "run", "--resume", run["id"])
    assert done.returncode == 1, done.stderr  # quick scored 0
    assert "quick  scored below 1 (check: 0)" in done.stdout
    assert "slow   passed (check: 1)" in done.stdout
    assert "eval all: 1 of 2 passed" in done.stdout
    assert done.stderr.count("resuming ") == 1
    assert lines(trace) == ["box", "write", "wait", "wait", "check"]
    nothing_left(env["home"])


def test_the_next_run_reaps_what_a_killed_run_left(env, tmp_path):
    proc, record, trace, release = start_and_wait_in_step(env, tmp_path)
    proc.kill()
    proc.wait(timeout=10)
    pid = stored(env["home"], "journal")[0]["ops"][-1]["value"]["pid"]
    assert alive(pid)
    other = write_bundle(
        tmp_path / "other",
        {
            "noop": [
                {"id": "box", "type": "t_box"},
                {
                    "id": "check",
                    "type": "t_check",
                    "verifier_id": "c",
                    "path": "/app/server.pid",
                    "text": "?",
                },
            ]
        },
    )
    done = finish(env, "run", str(other))
    assert "reaped 1 sandbox(es)" in done.stderr, done.stderr
    assert not alive(pid)
    nothing_left(env["home"])
