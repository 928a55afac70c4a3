"""run_docker_container on the real Docker daemon: the image is built from a bundle artifact
(with `dockerfile_path` and `build_args`), runs its own command next to the sandbox, is
addressed by the verifiers, and is torn down with the run."""

from __future__ import annotations

import re

import pytest

from agent_env.errors import BundleError

pytestmark = pytest.mark.anyio

DOCKERFILE = """FROM {base}
ARG GREETING=unset
RUN echo "$GREETING" > /greeting
WORKDIR /srv
CMD ["sh", "-c", "echo started > /srv/started; exec sleep infinity"]
"""


@pytest.fixture
def docker_runner(runner):
    pytest.importorskip("agentenv_docker_sandbox")
    from agentenv_docker_sandbox.testing import BASE_IMAGE, require_docker

    require_docker()
    import agentenv_docker_sandbox.hooks

    plain = runner.plugins

    def plugins():
        manager = plain()
        manager.register(agentenv_docker_sandbox.hooks, "docker-sandbox")
        return manager

    runner.plugins = plugins
    runner.base_image = BASE_IMAGE
    return runner


def box(base: str) -> dict:
    return {
        "id": "box",
        "type": "deploy_sandbox",
        "sandbox_name": "box",
        "sandbox_mode": "vm",
        "sandbox_type": "docker",
        "image": base,
    }


RUN = {
    "id": "run",
    "type": "run_docker_container",
    "sandbox_name": "box",
    "docker_context_artifact_id": "ctx",
    "dockerfile_path": "docker/App.Dockerfile",
    "build_args": {"GREETING": "hello-arg"},
    "env_vars": {"MODE": "test"},
    "ready_command": "test -f /srv/started",
}


async def test_a_container_runs_its_image_command_and_the_verifiers_reach_it(docker_runner):
    import docker

    base = docker_runner.base_image
    steps = [
        box(base),
        RUN,
        {
            "id": "files",
            "type": "verify_sandbox",
            "sandbox_name": "task-container",
            "verifier_id": "files",
            "base_dir": "/srv",
            "criteria": [
                {"type": "probe_file_contains", "paths": ["/greeting"], "expected": "^hello-arg$"},
                {"type": "probe_file_exists", "paths": ["started"]},
                {"type": "bash_cmd_succeeds", "bash_cmd": 'test "$MODE" = test'},
            ],
        },
        {
            "id": "tests",
            "type": "run_container_unit_tests_verifier",
            "sandbox_name": "box",
            "container_name": "task-container",
            "command": "grep -q hello-arg /greeting && test ! -f /app/never",
            "verifier_id": "tests",
        },
    ]
    files = {
        "artifacts/ctx/docker/App.Dockerfile": DOCKERFILE.format(base=base),
        "artifacts/ctx/Dockerfile": "FROM scratch\n",
    }
    record = await docker_runner.run(steps, files)
    assert record["outcome"] == "passed (files: 1, tests: 1)", (
        record["failure"],
        docker_runner.logs.lines,
    )
    entry = docker_runner.state["containers"]["box"]["task-container"]
    assert entry["sandbox"] == "task-container"
    assert entry["image"].startswith("agentenv/container-task-container:")
    ids = [s["id"] for s in docker_runner.state["sandboxes"].values()]
    client = docker.from_env()
    try:
        listed = client.api.containers(all=True)  # no inspect of each (one may be going)
        left = [n.lstrip("/") for c in listed for n in c.get("Names") or [] if n.lstrip("/") in ids]
    finally:
        client.close()
    assert left == []  # torn down with the run


async def test_a_failing_build_and_a_local_sandbox_fail_the_step_clearly(docker_runner):
    base = docker_runner.base_image
    broken = {"artifacts/ctx/Dockerfile": f"FROM {base}\nRUN exit 3\n"}
    record = await docker_runner.run([box(base), {**RUN, "dockerfile_path": "Dockerfile"}], broken)
    assert "failed at step 'run'" in record["outcome"]
    assert "building the image failed" in record["failure"]["message"]

    local = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"}
    record = await docker_runner.run([local, {**RUN, "dockerfile_path": "Dockerfile"}], broken)
    assert "provider 'local', which cannot build images" in record["failure"]["message"]

    record = await docker_runner.run(
        [box(base), {**RUN, "dockerfile_path": "Dockerfile", "privileged": True}], broken
    )
    assert "privileged: not supported here" in record["failure"]["message"]


async def test_containers_on_a_named_network_reach_each_other_by_name(docker_runner):
    base = docker_runner.base_image
    web = {
        "id": "web",
        "type": "run_docker_container",
        "sandbox_name": "box",
        "container_name": "web",
        "docker_context_artifact_id": "web",
        "network": "app-net",
        "ports": [8080],
        "ready_command": "python -c \"import urllib.request as u; u.urlopen('http://127.0.0.1:8080')\"",
    }
    client = {
        "id": "client",
        "type": "run_docker_container",
        "sandbox_name": "box",
        "container_name": "client",
        "docker_context_artifact_id": "web",
        "network": "app-net",
        "command_override": "sleep infinity",
        "ready_command": "python -c \"import urllib.request as u; u.urlopen('http://web:8080/hi.txt')\"",
    }
    dockerfile = (
        f"FROM {base}\nWORKDIR /srv\nRUN echo hi > hi.txt\n"
        'CMD ["python", "-m", "http.server", "8080"]\n'
    )
    twice = {**client, "id": "again"}
    record = await docker_runner.run(
        [box(base), web, client, twice], {"artifacts/web/Dockerfile": dockerfile}
    )
    assert "failed at step 'again'" in record["outcome"], (record, docker_runner.logs.lines)
    assert "a sandbox named 'client' already runs in this task" in record["failure"]["message"]
    containers = docker_runner.state["containers"]["box"]
    # reached at the container's address (this machine hosts the bridge), else on loopback
    assert re.fullmatch(r"http://[\d.]+:\d+", containers["web"]["ports"]["8080"])
    assert containers["client"]["network"] == "app-net"


def test_bad_container_fields_are_bundle_problems(docker_runner):
    docker_runner.write(
        {
            "artifacts/ctx/Dockerfile": "FROM scratch\n",
            "tasks/t.json": [
                box("x"),
                {"id": "a", "type": "run_docker_container", "sandbox_name": "box"},
                {**RUN, "id": "b", "docker_context_url": "https://example.com/c.zip"},
                {**RUN, "id": "c", "docker_context_artifact_id": "ctxx"},
                {**RUN, "id": "d", "dockerfile_path": "../Dockerfile"},
                {**RUN, "id": "f", "command_overide": "x"},
                {**RUN, "id": "g", "container_name": "my app"},
                {
                    "id": "e",
                    "type": "run_docker_container",
                    "sandbox_name": "box",
                    "docker_context_url": "ftp://host/c.tar",
                },
            ],
        }
    )
    with pytest.raises(BundleError) as caught:
        docker_runner.load()
    found = "\n".join(caught.value.problems)
    assert "step 'a': names no build context" in found
    assert "step 'b': set either docker_context_artifact_id or docker_context_url" in found
    assert "step 'c'" in found and "no artifact 'ctxx'" in found and "did you mean 'ctx'" in found
    assert "step 'd': dockerfile_path: '../Dockerfile' must be relative" in found
    assert "step 'f': unknown field 'command_overide' (did you mean 'command_override'?)" in found
    assert "step 'g': container_name: 'my app' must be letters" in found
    assert "step 'e': docker_context_url: 'ftp://host/c.tar' must be an http(s) URL" in found


async def test_an_agent_installed_into_the_container_answers_from_it(docker_runner, tmp_path):
    """install_agent with container_name: the agent folder runs inside the task container
    (which has the protocol installed from the checkout's wheel) and answers prompts."""
    from agentenv_core_steps.envs.wheels import protocol_wheel

    base = docker_runner.base_image
    wheel = protocol_wheel(tmp_path / "wheels")
    agent = (
        "import os\nfrom pathlib import Path\n"
        "from agentenv_protocol.agent import A2AAgent, AgentResult, serve\n\n\n"
        "class Where(A2AAgent):\n    name = 'where'\n\n"
        "    async def run(self, request):\n"
        "        return AgentResult(text=f\"in {os.environ.get('TASK_ROLE')} at {Path.cwd()}\")\n\n\n"
        "serve(Where())\n"
    )
    files = {
        "artifacts/ctx/Dockerfile": (
            f"FROM {base}\nCOPY {wheel.name} /tmp/w/\n"
            "RUN pip install --no-cache-dir --disable-pip-version-check /tmp/w/*.whl\n"
            "ENV TASK_ROLE=task-container\nWORKDIR /work\n"
            'CMD ["sleep", "infinity"]\n'
        ),
        "agents/where/agent.toml": 'command = ["python", "agent.py"]\n',
        "agents/where/agent.py": agent,
    }
    docker_runner.write(files)
    (docker_runner.root / "artifacts/ctx" / wheel.name).write_bytes(wheel.read_bytes())
    steps = [
        box(base),
        {
            "id": "run",
            "type": "run_docker_container",
            "sandbox_name": "box",
            "docker_context_artifact_id": "ctx",
            "ports": [8123],
        },
        {
            "id": "install",
            "type": "install_agent",
            "sandbox_name": "box",
            "container_name": "task-container",
            "a2a_agent_id": "where",
            "a2a_port": 8123,
            "workspace_dir": "/work/agent",
        },
        {
            "id": "ask",
            "type": "prompt_agent",
            "prompt_id": "ask",
            "prompt": "where?",
            "timeout_seconds": 60,
        },
        {
            "id": "check",
            "type": "agent_prompt_response_verifier",
            "prompt_id": "ask",
            "verifier_id": "where",
            "criteria": [
                {"type": "response_contains", "needles": ["in task-container at /work/agent"]}
            ],
        },
    ]
    record = await docker_runner.run(steps)
    assert record["outcome"] == "passed (where: 1)", (record["failure"], docker_runner.logs.lines)
    agent_record = docker_runner.state["agents"]["default-agent"]
    assert agent_record["installed_in"] == "task-container"
    assert agent_record["provider"] == "docker"
