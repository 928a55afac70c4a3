"""A `--keep` run keeps its trial logs too: saved when the trial ends, while its sandboxes live
on, and shown by `runs show` and the explorer; Ctrl-C then tears the sandboxes down."""

from __future__ import annotations

import json
import signal
import subprocess
import time


def test_keep_run_logs_are_saved_while_its_sandboxes_live(client, project) -> None:
    held = subprocess.Popen(
        [project.agent_env, "run", "notes-agent", "--agent", "oracle", "--keep"],
        cwd=project.root,
        env=project.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said = []
        deadline = time.monotonic() + 240
        while not any("press Ctrl-C to tear them down" in line for line in said):
            line = held.stderr.readline()
            assert line or held.poll() is None, "".join(said)
            said.append(line)
            assert time.monotonic() < deadline, "".join(said)
        run = client.get("/api/v1/runs?limit=1").json()["items"][0]
        assert run["counts"]["passed"] == 1
        [trial] = client.get(f"/api/v1/runs/{run['id']}/trials").json()["items"]
        # the sandboxes are still there, and their output is already kept
        assert json.loads(project.cli("sandbox", "list", "--json").stdout)
        logs = client.get(f"/api/v1/trials/{trial['id']}").json()["logs"]
        assert "serving 'notes'" in logs["env_notes"]
        shown = project.cli("runs", "show", trial["id"])
        assert shown.returncode == 0, shown.stderr
        assert "log env_notes:" in shown.stdout and "serving 'notes'" in shown.stdout
    finally:
        held.send_signal(signal.SIGINT)
        held.communicate(timeout=120)
    assert json.loads(project.cli("sandbox", "list", "--json").stdout) == []
