"""Issue 35: the existing product's `agents` bundle (from the `agentenv-framework==0.9.1364`
wheel, downloaded at test time) pins `sandbox_type: "local"` on a Dockerfile agent. As for a
Dockerfile env, `local` means this machine: the agent's image is built and run on Docker.

Its task files and `aliases.toml` run unchanged. Its agents' own images cannot be built here:
their Dockerfiles download Node from nodejs.org, uv from GitHub and Claude Code from
downloads.claude.ai, which this machine cannot reach. So each agent folder gets a stand-in
Dockerfile (our tool-loop agent served over A2A, `FROM` our base image), and the model is a
scripted OpenAI-compatible server.
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import test_reference_bundles as reference  # noqa: E402
from agents_support import agent_env, run_json  # noqa: E402

from agentenv_protocol.agent.testing import ScriptedModelServer  # noqa: E402

#: the wheel and base-image fixtures of the reference-bundle tests
reference_wheel = reference.reference_wheel
base_image = reference.base_image
PREFIX = "agent_env/agents/"
#: its six tasks, one per agent
AGENTS = ("claude-code", "codex", "gemini", "opencode", "openhands", "pi")
TASKS = tuple(f"{agent}-smoke" for agent in AGENTS)

STAND_IN = """FROM {base}
COPY agentenv-wheels/ /tmp/agentenv-wheels/
RUN pip install --no-cache-dir --disable-pip-version-check /tmp/agentenv-wheels/*.whl
ENV PYTHONUNBUFFERED=1 PORT=8000
CMD ["python", "-m", "agentenv_protocol.agent.tool_loop_agent"]
"""


def copy_agents_bundle(wheel: Path, dest: Path) -> Path:
    """The bundle's files out of the wheel, unchanged."""
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if member.startswith(PREFIX) and not member.endswith("/"):
                if "__pycache__" in member:
                    continue
                target = dest / member[len(PREFIX) :]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(member))
    return dest


def test_every_task_pins_local_on_a_dockerfile_agent(reference_wheel, tmp_path):
    """What the tests below rely on: the bundle is as described."""
    bundle = copy_agents_bundle(reference_wheel, tmp_path / "agents")
    for task in sorted((bundle / "tasks").glob("*.json")):
        deploy = json.loads(task.read_text())[0]
        assert deploy["type"] == "deploy_agent" and deploy["sandbox_type"] == "local"
        assert (bundle / "agents" / deploy["a2a_agent_id"] / "Dockerfile").is_file()


def test_without_a_provider_that_builds_images_the_error_names_the_agent(reference_wheel, tmp_path):
    bundle = copy_agents_bundle(reference_wheel, tmp_path / "agents")
    done = agent_env(
        tmp_path / "home",
        "--disable-plugin",
        "agentenv-docker-sandbox",
        "run",
        str(bundle),
        "--task",
        "pi-smoke",
    )
    assert done.returncode == 1
    out = done.stdout + done.stderr
    assert (
        "agent 'pi' (deployed as 'default-agent') has a Dockerfile, and sandbox_type 'local' "
        "builds no images (local cannot): install one that can (docker: pip install "
        "agentenv-docker-sandbox)"
    ) in out, out


@pytest.fixture(scope="module")
def model():
    server = ScriptedModelServer([{"content": "42", "repeat": True}])
    server.start(host="0.0.0.0")  # a container reaches it through the bridge
    yield server
    server.stop()


@pytest.mark.docker
def test_its_tasks_run_on_docker_when_they_say_local(reference_wheel, base_image, model, tmp_path):
    bundle = copy_agents_bundle(reference_wheel, tmp_path / "agents")
    for folder in (bundle / "agents").iterdir():
        if folder.is_dir():
            (folder / "Dockerfile").write_text(STAND_IN.format(base=base_image))
    data, stderr = run_json(
        tmp_path / "home",
        str(bundle),
        "--model",
        "scripted-model",
        env={
            "LITELLM_BASE_URL": model.base_url,
            "LITELLM_API_KEY": "sk-scripted-0123456789",
            # a machine where local processes cannot be isolated: the agents run in containers,
            # so they are not refused as untrusted host processes
            "AGENT_ENV_SANDBOX_LOCAL_BWRAP": "/nonexistent/bwrap",
        },
    )
    by_task = {t["task"]["name"]: t for t in data["tasks"]}
    assert sorted(by_task) == sorted(TASKS), stderr
    for name, record in by_task.items():
        assert record["status"] == "passed", f"{name}: {record['outcome']}\n{stderr}"
        assert record["verifiers"]["answer"]["score"] == 1.0
    for folder in AGENTS:
        assert (
            f"agent '{folder}' (deployed as 'default-agent') deploys on docker: "
            "local cannot build its Dockerfile"
        ) in stderr
    assert len(model.requests) == len(TASKS)
    assert all(r["model"] == "scripted-model" for r in model.requests)
