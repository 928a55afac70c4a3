"""Resume never runs a finished step twice where it can keep it, and never runs a step that is
not re-runnable twice at all: `agent-env run` SIGKILLed mid-trial, then `--resume`, with steps
whose effect (a line in a file outside every sandbox) counts their runs.

- a trial whose sandbox survived keeps its finished steps: each ran once;
- a trial whose sandbox is gone runs the steps that made and used it again, and its record says
  so (`restarts`, shown by `runs show`);
- a step whose type is not re-runnable (`Step.rerunnable = False`) that was running at the kill,
  or that a resume would have to run again, fails the trial as `infrastructure`, which
  `--retry-infra` does not retry: it ran once.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_run_cli import stored  # noqa: E402

LAUNCH = Path(__file__).parent / "fixtures" / "fault-corpus" / "launch.py"


@pytest.fixture
def env(tmp_path: Path) -> dict:
    home = tmp_path / "home"
    home.mkdir()
    e = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    e["AGENT_ENV_HOME"] = str(home)
    # the sandboxes of the killed run must outlive it (a resume adopts them): no watchdog
    e["AGENT_ENV_WATCHDOG"] = "0"
    return {"env": e, "home": home, "cwd": tmp_path}


def start(env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(LAUNCH), *args],
        env=env["env"],
        cwd=env["cwd"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(LAUNCH), *args],
        env=env["env"],
        cwd=env["cwd"],
        capture_output=True,
        text=True,
        timeout=120,
    )


def counted(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def killed_in(env: dict, tmp_path: Path, steps: list[dict], step: str) -> tuple[str, Path]:
    """Run a one-task bundle of `steps` and SIGKILL it once step `step` counted itself; the
    run's id and the counter file."""
    bundle = tmp_path / "bundle"
    (bundle / "tasks").mkdir(parents=True)
    (bundle / "tasks" / "t.json").write_text(json.dumps(steps))
    proc = start(env, "run", str(bundle), "--sandbox", "local")
    counter = tmp_path / "counter.txt"
    deadline = time.monotonic() + 60
    while step not in counted(counter):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the step never started"
        time.sleep(0.05)
    proc.kill()
    proc.wait(timeout=10)
    return _run_id(env), counter


def _run_id(env: dict) -> str:
    """The killed run's id, read from its store (an `agent-env` command would reap the dead
    run's sandboxes before the resume could adopt them)."""
    [run] = stored(env["home"], "runs")
    return run["id"]


def steps_for(tmp_path: Path, *kinds: tuple[str, str]) -> list[dict]:
    counter, release = str(tmp_path / "counter.txt"), str(tmp_path / "release")
    out = []
    for sid, kind in kinds:
        step = {"id": sid, "type": kind, "counter": counter}
        if kind in ("f_hold", "f_pay_and_hold"):
            step["release"] = release
        out.append(step)
    return out


def resume_json(env: dict, run_id: str, *args: str) -> dict:
    done = finish(env, "run", "--resume", run_id, "--json", *args)
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"exit {done.returncode}\n{done.stdout}\n{done.stderr}") from None


def sandbox_folders(home: Path) -> list[Path]:
    """The work folders of the local sandboxes under `home` (their `.meta` folders left out)."""
    folder = home / "sandboxes"
    found = folder.iterdir() if folder.exists() else []
    return [p for p in found if not p.name.startswith(".") and not p.name.endswith(".meta")]


def remove_sandbox(home: Path) -> None:
    """The one local sandbox is gone (its folder and its description), as after a reboot."""
    [folder] = sandbox_folders(home)
    shutil.rmtree(folder)
    shutil.rmtree(folder.with_name(folder.name + ".meta"))


def test_finished_steps_of_a_trial_whose_sandbox_survived_run_once(env, tmp_path):
    steps = steps_for(tmp_path, ("box", "f_box"), ("pay", "f_pay"), ("wait", "f_hold"))
    run_id, counter = killed_in(env, tmp_path, steps, "wait")
    assert counted(counter) == ["box", "pay", "wait"]
    (tmp_path / "release").touch()
    data = resume_json(env, run_id)
    [record] = data["tasks"]
    assert record["status"] == "unscored" and record["resumes"] == 1, record
    # box and pay finished before the kill and ran once; wait was running and ran again
    assert counted(counter) == ["box", "pay", "wait", "wait"]
    assert "restarts" not in record


def test_a_trial_whose_sandbox_is_gone_restarts_and_says_so(env, tmp_path):
    steps = steps_for(tmp_path, ("box", "f_box"), ("note", "f_count"), ("wait", "f_hold"))
    run_id, counter = killed_in(env, tmp_path, steps, "wait")
    remove_sandbox(env["home"])
    (tmp_path / "release").touch()
    data = resume_json(env, run_id)
    [record] = data["tasks"]
    assert record["status"] == "unscored", record
    assert counted(counter) == ["box", "note", "wait", "box", "note", "wait"]
    [restart] = record["restarts"]
    assert restart["resume"] == 1 and restart["steps"] == ["box", "note"]
    assert "made by box gone" in restart["reason"]
    shown = finish(env, "runs", "show", record["id"])
    assert shown.returncode == 0, shown.stderr
    assert "restarted on resume 1: box, note (sandbox(es) made by box gone" in shown.stdout


def test_a_step_that_is_not_rerunnable_is_never_run_twice(env, tmp_path):
    # it was running at the kill: whether its effect happened is unknown
    steps = steps_for(tmp_path, ("box", "f_box"), ("pay", "f_pay_and_hold"))
    run_id, counter = killed_in(env, tmp_path, steps, "pay")
    (tmp_path / "release").touch()
    data = resume_json(env, run_id, "--retry-infra", "2")
    [record] = data["tasks"]
    assert record["failure_class"] == "infrastructure" and record["attempt"] == 0, record
    assert (
        "step 'pay' (f_pay_and_hold) was running when the run was interrupted"
        in (record["outcome"])
    )
    assert record["failure"]["retry"] is False
    assert counted(counter) == ["box", "pay"]
    [task] = data["results"]["tasks"]
    assert task["excluded"] == {"infrastructure": 1}
    # a second resume keeps the decided trial: still once
    again = resume_json(env, run_id, "--retry-infra", "2")
    assert [r["id"] for r in again["tasks"]] == [record["id"]]
    assert counted(counter) == ["box", "pay"]
    assert sandbox_folders(env["home"]) == []  # the killed run's sandbox was reaped


def test_a_finished_step_that_is_not_rerunnable_stops_a_restart(env, tmp_path):
    steps = steps_for(tmp_path, ("box", "f_box"), ("pay", "f_pay"), ("wait", "f_hold"))
    run_id, counter = killed_in(env, tmp_path, steps, "wait")
    remove_sandbox(env["home"])
    (tmp_path / "release").touch()
    data = resume_json(env, run_id)
    [record] = data["tasks"]
    assert record["failure_class"] == "infrastructure", record
    assert "step 'pay' (f_pay) would run again (sandbox(es) made by box gone" in record["outcome"]
    assert counted(counter) == ["box", "pay", "wait"]
    assert sandbox_folders(env["home"]) == []


def test_many_trials_in_flight_at_a_kill_run_no_finished_step_twice(env, tmp_path):
    steps = steps_for(tmp_path, ("box", "f_box"), ("pay", "f_pay"), ("wait", "f_hold"))
    bundle = tmp_path / "bundle"
    (bundle / "tasks").mkdir(parents=True)
    (bundle / "tasks" / "t.json").write_text(json.dumps(steps))
    proc = start(env, "run", str(bundle), "--sandbox", "local", "--trials", "6")
    counter = tmp_path / "counter.txt"
    deadline = time.monotonic() + 90
    while counted(counter).count("wait") < 6:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, counted(counter)
        time.sleep(0.05)
    proc.kill()
    proc.wait(timeout=10)
    (tmp_path / "release").touch()
    data = resume_json(env, _run_id(env))
    assert [r["status"] for r in data["tasks"]] == ["unscored"] * 6
    assert all("restarts" not in r and r["resumes"] == 1 for r in data["tasks"])
    seen = counted(counter)
    # six trials in flight: each made its box and paid once; only the running step ran again
    assert (seen.count("box"), seen.count("pay"), seen.count("wait")) == (6, 6, 12)
