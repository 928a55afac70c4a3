"""A run killed while its A2A agent is working resumes: the env and the agent's sandbox are
adopted, the gateway (in-memory, so new) is handed to the agent again, and the task passes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import AGENT_ENV, NOTES_AGENT, TOOL_THEN_TEXT, run_json  # noqa: E402

from agentenv_protocol.agent.testing import ScriptedModelServer  # noqa: E402


def test_sigkill_during_a_prompt_then_resume_passes(tmp_path):
    home = tmp_path / "home"
    script = [{"content": "answered after the runner died", "delay": 10}, *TOOL_THEN_TEXT]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_ENV_", "LITELLM_"))}
    with ScriptedModelServer(script) as model:
        # no watchdog: the env and the agent must outlive the runner, for the resume to adopt
        env.update(
            AGENT_ENV_HOME=str(home), LITELLM_BASE_URL=model.base_url, AGENT_ENV_WATCHDOG="0"
        )
        runner = subprocess.Popen(
            [str(AGENT_ENV), "run", str(NOTES_AGENT), "--agent", "a2a_agent", "--json"],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 120
            while not model.requests:
                assert runner.poll() is None, runner.communicate()
                assert time.monotonic() < deadline, "the agent never called the model"
                time.sleep(0.05)
            os.kill(runner.pid, signal.SIGKILL)
            runner.wait(timeout=30)
        finally:
            if runner.poll() is None:
                runner.kill()
            runner.stdout.close()
            runner.stderr.close()
        with sqlite3.connect(
            home / "documents.sqlite3"
        ) as db:  # no agent-env command: it would reap
            [(run_id,)] = db.execute(
                "SELECT key FROM documents WHERE collection = 'runs'"
            ).fetchall()
        data, stderr = run_json(home, "--resume", run_id, env={"LITELLM_BASE_URL": model.base_url})
    [record] = data["tasks"]
    assert record["status"] == "passed", record["outcome"] + "\n" + stderr
    assert record["resumes"] == 1
    assert record["verifiers"]["env-state"]["score"] == 1.0
    assert "is gone" not in stderr  # the env and the agent were adopted, not redeployed
    assert [s["status"] for s in record["steps"].values()][:2] == ["completed", "completed"]
    assert len(model.requests) == 3


def test_resume_deploys_the_agent_and_model_the_run_started_with(tmp_path):
    home = tmp_path / "home"
    first, _ = run_json(home, str(NOTES_AGENT), "--model", "m-first")  # no endpoint: deploy fails
    [record] = first["tasks"]
    assert (record["failure"]["step"], record["failure"]["class"]) == ("agent", "infrastructure")
    with ScriptedModelServer(TOOL_THEN_TEXT) as model:
        data, stderr = run_json(
            home, "--resume", first["run_id"], env={"LITELLM_BASE_URL": model.base_url}
        )
    [record] = data["tasks"]
    assert record["status"] == "passed", record["outcome"] + "\n" + stderr
    assert [r["model"] for r in model.requests] == ["m-first", "m-first"]
