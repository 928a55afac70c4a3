"""Stopping `agent-env up` (Ctrl-C or SIGTERM; exit 0) while a run it started is going: the run, which runs in
the explorer's process, is cancelled, its trial recorded as cancelled and its sandbox torn
down before the process exits."""

from __future__ import annotations

import json
import signal
import time
import urllib.request

import pytest


def _call(base: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        base + path,
        data=None if body is None else json.dumps(body).encode(),
        method="GET" if body is None else "POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=200) as answer:
        return json.loads(answer.read())


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_stopping_up_cancels_the_runs_it_started(project, start_up, signum) -> None:
    proc, base = start_up(project)
    try:
        run_id = _call(base, "/api/v1/runs", {"spec": "slow"})["run_id"]
        deadline = time.monotonic() + 60
        while _call(base, f"/api/v1/runs/{run_id}")["counts"]["running"] == 0:
            assert time.monotonic() < deadline, "the slow trial never started"
            time.sleep(0.1)
        assert json.loads(project.cli("sandbox", "list", "--json").stdout)
    finally:
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert json.loads(project.cli("sandbox", "list", "--json").stdout) == []
    shown = json.loads(project.cli("runs", "show", run_id, "--json").stdout)
    assert [i["status"] for i in shown["instances"]] == ["cancelled"]
