"""Stopping `agent-env up` (Ctrl-C or SIGTERM; exit 0) while a run it started is going: the run, which runs in
the explorer's process, is cancelled, its trial recorded as cancelled and its sandbox torn
down before the process exits."""

from __future__ import annotations

import json
import signal
import time
import urllib.request

import pytest


def _call(base: str, token: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        base + path,
        data=None if body is None else json.dumps(body).encode(),
        method="GET" if body is None else "POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, timeout=200) as answer:
        return json.loads(answer.read())


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_stopping_up_cancels_the_runs_it_started(project, start_up, signum) -> None:
    proc, base, token = start_up(project)
    try:
        run_id = _call(base, token, "/api/v1/runs", {"spec": "slow"})["run_id"]
        deadline = time.monotonic() + 60
        while _call(base, token, f"/api/v1/runs/{run_id}")["counts"]["running"] == 0:
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


def test_an_open_event_stream_does_not_hold_up_stopping(project, start_up) -> None:
    """A browser following a live run keeps an event stream open; Ctrl-C ends it at once
    instead of waiting out the stream (15 s)."""
    proc, base, token = start_up(project)
    try:
        run_id = _call(base, token, "/api/v1/runs", {"spec": "slow"})["run_id"]
        deadline = time.monotonic() + 60
        while _call(base, token, f"/api/v1/runs/{run_id}")["counts"]["running"] == 0:
            assert time.monotonic() < deadline, "the slow trial never started"
            time.sleep(0.1)
        stream = urllib.request.urlopen(
            f"{base}/api/v1/runs/{run_id}/events?token={token}", timeout=30
        )
        assert stream.readline() == b"retry: 500\n"
    finally:
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    stopped = time.monotonic() - started
    stream.close()
    assert proc.returncode == 0, err
    assert stopped < 10, f"stopping took {stopped:.1f}s"
