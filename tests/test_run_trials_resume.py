"""A 200-trial `agent-env run` killed with SIGKILL halfway, then `--resume RUN_ID`: every trial
ends exactly once, finished trials are kept as they were, nothing is left behind."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from test_run_cli import nothing_left, stored, write_bundle
from test_run_resume import LAUNCH, env, finish, lines, start, wait_for  # noqa: F401

TRIALS = 200
FINAL = ("passed", "scored_below")


def test_sigkill_halfway_through_200_trials_then_resume(env, tmp_path):  # noqa: F811
    started, verified = tmp_path / "started.txt", tmp_path / "verified.txt"
    evens = ",".join(str(i) for i in range(0, TRIALS, 2))
    task = [
        {
            "id": "box",
            "type": "t_light_box",
            "text": "{trial}",
            "pause": 0.02,
            "trace": str(started),
        },
        {
            "id": "coin",
            "type": "t_coin",
            "value": "{trial}",
            "passing": evens,
            "trace": str(verified),
        },
    ]
    bundle = write_bundle(tmp_path / "b", {"coin": task})
    proc = start(env, "run", str(bundle), "--trials", str(TRIALS), "--concurrency", "8")
    wait_for(lambda: len(lines(verified)) >= TRIALS // 2 or proc.poll() is not None, 120)
    proc.kill()
    proc.wait(timeout=10)
    assert proc.returncode == -9

    [run] = stored(env["home"], "runs")
    before = {r["id"]: r for r in stored(env["home"], "task_instances")}
    kept = {i: r for i, r in before.items() if r["status"] in FINAL}
    assert TRIALS // 4 < len(kept) < TRIALS, len(kept)
    assert any(r["status"] == "running" for r in before.values())

    export = tmp_path / "trials.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            str(LAUNCH),
            "run",
            "--resume",
            run["id"],
            "--export",
            str(export),
        ],
        env={**env["env"], "AGENT_ENV_RUN_PROGRESS_INTERVAL": "3600"},
        cwd=env["cwd"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 1, done.stderr  # the odd trials scored below 1
    assert f"{len(kept)} trial(s) finished and kept, {TRIALS - len(kept)} to run" in done.stderr

    rows = [json.loads(line) for line in export.read_text().splitlines()]
    assert sorted(r["trial"] for r in rows) == list(range(TRIALS))  # none lost, none twice
    assert len({r["instance_id"] for r in rows}) == TRIALS
    assert {r["trial"] for r in rows if r["passed"]} == set(range(0, TRIALS, 2))
    assert {r["status"] for r in rows} == set(FINAL)
    table = next(ln for ln in done.stdout.splitlines() if ln.startswith("coin "))
    assert table.split()[1:4] == [str(TRIALS), str(TRIALS // 2), "0.500"]

    after = {r["id"]: r for r in stored(env["home"], "task_instances")}
    assert len(after) == TRIALS
    for instance_id, record in kept.items():  # finished trials were not run again
        assert after[instance_id]["finished_at"] == record["finished_at"]
        assert after[instance_id]["resumes"] == 0
    verdicts = Counter(lines(verified))
    assert all(verdicts[str(r["trial"])] == 1 for r in kept.values())
    assert all(verdicts[str(t)] >= 1 for t in range(TRIALS))
    nothing_left(env["home"])


def test_ctrl_c_during_trials_then_resume(env, tmp_path):  # noqa: F811
    import signal

    started = tmp_path / "started.txt"
    task = [
        {
            "id": "box",
            "type": "t_light_box",
            "text": "{trial}",
            "pause": 0.05,
            "trace": str(started),
        },
        {"id": "coin", "type": "t_coin", "value": "x", "passing": "x"},
    ]
    bundle = write_bundle(tmp_path / "b", {"t": task})
    proc = start(env, "run", str(bundle), "--trials", "60", "--concurrency", "4")
    wait_for(lambda: len(lines(started)) >= 12 or proc.poll() is not None, 60)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "excluded" in out and "cancelled" in out  # the partial table says what was cut
    statuses = Counter(r["status"] for r in stored(env["home"], "task_instances"))
    assert statuses["cancelled"] >= 1 and statuses["passed"] >= 1
    nothing_left(env["home"])

    [run] = stored(env["home"], "runs")
    done = finish(env, "run", "--resume", run["id"], "--json", timeout=120)
    assert done.returncode == 0, done.stderr
    [task_result] = json.loads(done.stdout)["results"]["tasks"]
    assert (task_result["trials"], task_result["passed"], task_result["excluded"]) == (
        60,
        60,
        {},
    )
    nothing_left(env["home"])


def test_resume_refuses_a_run_whose_process_is_alive(env, tmp_path):  # noqa: F811
    release = tmp_path / "release"
    task = [{"id": "wait", "type": "t_wait", "release": str(release)}]
    bundle = write_bundle(tmp_path / "b", {"t": task})
    proc = start(env, "run", str(bundle), "--trials", "3")
    try:
        wait_for(lambda: stored(env["home"], "runs") or proc.poll() is not None, 60)
        [run] = stored(env["home"], "runs")
        done = finish(env, "run", "--resume", run["id"])
        assert done.returncode == 1
        assert f"run {run['id']!r} is still running in process {proc.pid}" in done.stderr
    finally:
        release.touch()
        proc.communicate(timeout=60)
    assert proc.returncode == 0
