"""`agent-env a2a-agent deploy` (the existing CLI's command; also `agent deploy`): a stored agent
comes up through the run service, answers A2A at the printed URL with the `--env-var` values in
its environment, `a2a-agent get-instance` finds it, and Ctrl-C tears it down."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

AGENT_ENV = Path(sys.executable).with_name("agent-env")

#: an A2A agent written for this test: it answers with what it sees
ANSWERS = """
import os
from agentenv_protocol.agent import A2AAgent, AgentResult, serve


class Says(A2AAgent):
    name = "says"

    async def run(self, request):
        return AgentResult(text=f"greeting={os.environ.get('GREETING')} heard={request.text}")


serve(Says())
"""


@pytest.fixture
def home_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_ENV_", "LITELLM_"))}
    env["AGENT_ENV_HOME"] = str(tmp_path / "home")
    return env


def _cli(env, cwd, *args):
    return subprocess.run(
        [str(AGENT_ENV), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def stored(home_env, tmp_path) -> Path:
    folder = tmp_path / "bundle" / "agents" / "says"
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(ANSWERS)
    (folder / "agent.toml").write_text('type = "a2a_agent"\ncommand = "python agent.py"\n')
    put = _cli(home_env, tmp_path, "agent", "put", str(tmp_path / "bundle"))
    assert put.returncode == 0, put.stderr
    return folder


def _read_json(stream) -> dict:
    text = ""
    for line in stream:
        text += line
        if line.startswith("}"):
            return json.loads(text)
    raise AssertionError(f"no JSON document on stdout: {text!r}")


async def _ask(url: str) -> str:
    from agentenv_protocol.agent.client import A2AClient, task_text

    async with A2AClient(url) as agent:
        return task_text(await agent.send("hello there", timeout=30))


def test_a2a_agent_deploy_serves_the_stored_agent_until_ctrl_c(home_env, tmp_path, stored):
    proc = subprocess.Popen(
        [str(AGENT_ENV), "a2a-agent", "deploy", "--id", "says"]
        + ["--env-var", "GREETING=bonjour", "--sandbox", "local", "--json"],
        env=home_env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        up = _read_json(proc.stdout)
        assert up["agent"].endswith("/says") and up["version"] == 1
        assert (up["type"], up["provider"]) == ("a2a_agent", "local")
        card = httpx.get(up["card_url"], timeout=10).json()
        assert card["name"] == "says"
        assert anyio.run(_ask, up["url"]) == "greeting=bonjour heard=hello there"
        shown = json.loads(
            _cli(home_env, tmp_path, "a2a-agent", "get-instance", "--id", up["instance"]).stdout
        )
        assert shown["run_id"] == up["run_id"]
        assert shown["agents"]["default-agent"]["url"] == up["url"]
        runs = json.loads(_cli(home_env, tmp_path, "runs", "list", "--json").stdout)
        [row] = [r for r in runs if r["id"] == up["run_id"]]
        assert row["front_end"] == "a2a-agent deploy"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        assert "torn down" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _cli(home_env, tmp_path, "sandbox", "list").stdout.strip() == "no sandboxes"
    with pytest.raises(httpx.TransportError):
        httpx.get(up["card_url"], timeout=2)


def test_bad_input_changes_nothing(home_env, tmp_path, stored):
    unknown = _cli(home_env, tmp_path, "a2a-agent", "deploy", "--id", "say")
    assert unknown.returncode == 1 and "did you mean 'says'" in unknown.stderr, unknown.stderr
    bad_var = _cli(home_env, tmp_path, "a2a-agent", "deploy", "--id", "says", "--env-var", "X")
    assert bad_var.returncode == 2 and "expected KEY=VALUE, got 'X'" in bad_var.stderr
    assert _cli(home_env, tmp_path, "sandbox", "list").stdout.strip() == "no sandboxes"
    assert json.loads(_cli(home_env, tmp_path, "runs", "list", "--json").stdout) == []


DOCKERFILE = """FROM {base}
COPY agentenv-wheels/ /tmp/agentenv-wheels/
RUN pip install --no-cache-dir --disable-pip-version-check /tmp/agentenv-wheels/*.whl
COPY agent.py /agent/agent.py
ENV PYTHONUNBUFFERED=1
CMD ["python", "/agent/agent.py"]
"""


@pytest.mark.docker
def test_a_dockerfile_agent_asked_for_local_runs_on_docker(home_env, tmp_path):
    from agentenv_docker_sandbox.testing import BASE_IMAGE, require_docker

    require_docker(BASE_IMAGE)
    folder = tmp_path / "bundle" / "agents" / "boxed"
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(ANSWERS)
    (folder / "Dockerfile").write_text(DOCKERFILE.format(base=BASE_IMAGE))
    assert _cli(home_env, tmp_path, "agent", "put", str(tmp_path / "bundle")).returncode == 0
    proc = subprocess.Popen(
        [str(AGENT_ENV), "agent", "deploy", "--id", "boxed", "--sandbox", "local"]
        + ["--env-var", "GREETING=hallo", "--json"],
        env=home_env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        up = _read_json(proc.stdout)
        assert up["provider"] == "docker"
        assert anyio.run(_ask, up["url"]) == "greeting=hallo heard=hello there"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        assert "deploys on docker: local cannot build its Dockerfile" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _cli(home_env, tmp_path, "sandbox", "list").stdout.strip() == "no sandboxes"
