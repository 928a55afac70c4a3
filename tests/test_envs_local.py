"""Envs as local host processes: the examples end to end through the real CLI, start-up
failures with the env's log, env.toml mistakes before anything runs, tokens never persisted,
the gateway stopped with its instance, and a SIGKILLed run resumed through a new gateway."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from envs_helpers import (
    AGENT_ENV,
    URL,
    agent_env,
    answers,
    cli_env,
    copy_example,
    env_bundle,
    nothing_left,
    write,
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.mark.parametrize("forkserver", ["1", "0"], ids=["warm-start", "plain-process"])
@pytest.mark.parametrize("example", ["notes-local", "echo-docker"])
def test_example_passes_as_local_processes_and_leaves_nothing(
    example, forkserver, home, tmp_path, monkeypatch
):
    monkeypatch.setenv("AGENTENV_ENV_FORKSERVER", forkserver)
    bundle = copy_example(example, tmp_path / example)
    done = agent_env(home, "run", str(bundle), "--sandbox", "local")
    assert done.returncode == 0, done.stderr
    assert "passed" in done.stdout
    [(provider, url)] = URL.findall(done.stderr)
    assert provider == "local"
    assert not answers(url), "the env process outlived the run"
    nothing_left(home)


def test_an_env_that_exits_fails_fast_with_its_log(home, tmp_path):
    bundle = env_bundle(
        tmp_path / "b",
        'command = "python server.py"\n',
        server="import sys\nprint('boom-marker: bad config', flush=True)\nsys.exit(3)\n",
    )
    t0 = time.monotonic()
    done = agent_env(home, "run", str(bundle), "--sandbox", "local")
    assert done.returncode == 1
    assert "exited with code 3" in done.stdout + done.stderr
    assert "boom-marker: bad config" in done.stdout + done.stderr
    assert time.monotonic() - t0 < 30
    nothing_left(home)


def test_an_env_that_never_answers_times_out_with_its_log(home, tmp_path):
    bundle = env_bundle(
        tmp_path / "b",
        'command = "python server.py"\nstartup_timeout_seconds = 1\n',
        server="import time\nprint('still warming up', flush=True)\ntime.sleep(120)\n",
    )
    done = agent_env(home, "run", str(bundle), "--sandbox", "local")
    out = done.stdout + done.stderr
    assert done.returncode == 1
    assert "did not answer within 1s" in out
    assert "still warming up" in out
    nothing_left(home)


def test_env_toml_mistakes_are_reported_before_anything_runs(home, tmp_path):
    bundle = env_bundle(tmp_path / "b", 'comand = "python server.py"\nport = "80"\n')
    done = agent_env(home, "run", str(bundle), "--sandbox", "local")
    assert done.returncode != 0
    assert "unknown key 'comand'" in done.stderr and "did you mean 'command'" in done.stderr
    assert "envs/e/env.toml: port: expected an integer, got '80'" in done.stderr
    assert "envs/e/env.toml: command: required when the env has no Dockerfile" in done.stderr
    assert "envs/e/env.toml: unknown key 'comand'" in done.stderr
    assert not (home / "sandboxes").exists() or not list((home / "sandboxes").iterdir())


def test_a_dockerfile_only_env_on_local_says_what_to_add(home, tmp_path):
    bundle = write(
        tmp_path / "b",
        {
            "envs/e/Dockerfile": "FROM python:3.11-slim\n",
            "tasks/t.json": [{"id": "deploy", "type": "deploy_env", "env_id": "e"}],
        },
    )
    # with Docker installed `local` falls back to it (tests/test_reference_bundles.py);
    # without it the message says what to add
    done = subprocess.run(
        [AGENT_ENV, "run", str(bundle), "--sandbox", "local"],
        env={**cli_env(home), "AGENT_ENV_DISABLE_PLUGINS": "docker-sandbox"},
        cwd=home.parent,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1
    assert "has only a Dockerfile" in done.stdout + done.stderr
    assert "--sandbox docker" in done.stdout + done.stderr


def test_steps_on_an_env_that_is_not_deployed_name_the_deployed_ones(home, tmp_path):
    steps = [
        {"id": "deploy", "type": "deploy_env", "env_id": "e"},
        {"id": "reset", "type": "reset_env", "env_id": "e", "fail_task_on_error": True},
        {"id": "check", "type": "env_outcome_verifier", "env_id": "f", "file_artifact_id": "v"},
    ]
    bundle = env_bundle(
        tmp_path / "b",
        'command = "python server.py"\n',
        steps=steps,
        extra={
            "envs/f/env.toml": 'command = "python server.py"\n',
            "envs/f/server.py": "",
            "artifacts/v/v.py": "def verify(mcp_url):\n    return []\n",
        },
    )
    done = agent_env(home, "run", str(bundle), "--sandbox", "local")
    assert done.returncode == 1
    assert "env 'f' is not deployed in this task" in done.stdout + done.stderr
    assert "deployed: e" in done.stdout + done.stderr


VERIFY_SPY = """
import json, os, urllib.request

def verify(mcp_url):
    with open(os.environ["SPY_FILE"], "w") as f:
        json.dump({"mcp_url": mcp_url}, f)
    return [{"id": "url", "result": True, "description": "called at " + mcp_url},
            {"id": "bad", "result": %s, "description": "second row"}]
"""


def test_tokens_are_never_persisted_and_the_gateway_stops_with_the_run(home, tmp_path, monkeypatch):
    spy = tmp_path / "spy.json"
    steps = [
        {"id": "deploy", "type": "deploy_env", "env_id": "e"},
        {
            "id": "check",
            "type": "env_outcome_verifier",
            "env_id": "e",
            "file_artifact_id": "v",
            "verifier_id": "spy",
            "score_aggregator": "weighted_average",
        },
    ]
    bundle = env_bundle(
        tmp_path / "b",
        'command = "python server.py"\n',
        steps=steps,
        extra={"artifacts/v/v.py": VERIFY_SPY % "False"},
    )
    monkeypatch.setenv("SPY_FILE", str(spy))
    done = agent_env(home, "run", str(bundle), "--sandbox", "local")
    assert done.returncode == 1, done.stderr  # scored below 1: one row fails
    mcp_url = json.loads(spy.read_text())["mcp_url"]
    token = mcp_url.split("/k/", 1)[1].split("/", 1)[0]
    assert len(token) >= 32
    persisted = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert token.encode() not in persisted
    assert b"[redacted]" in persisted  # the verifier's description carried the token
    assert done.stdout.count(token) == 0 and done.stderr.count(token) == 0
    assert not answers(mcp_url.split("/k/")[0]), "the gateway outlived its run"
    nothing_left(home)


def test_verifier_rows_of_the_wrong_shape_fail_the_step_clearly(home, tmp_path):
    steps = [
        {"id": "deploy", "type": "deploy_env", "env_id": "e"},
        {"id": "check", "type": "env_outcome_verifier", "env_id": "e", "file_artifact_id": "v"},
    ]
    bundle = env_bundle(
        tmp_path / "b",
        'command = "python server.py"\n',
        steps=steps,
        extra={
            "artifacts/v/v.py": "def verify(mcp_url):\n    return [{'id': 'x', 'result': 'yes'}]\n"
        },
    )
    done = agent_env(home, "run", str(bundle), "--sandbox", "local")
    assert done.returncode == 1
    assert "'result' must be true or false, got 'yes'" in done.stdout + done.stderr


KILLER = """
import os, signal

def run(input):
    marker = input["args"]["marker"]
    if not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(int(open(input["args"]["runner_pid_file"]).read()), signal.SIGKILL)
    return "second time"
"""


def test_a_sigkilled_run_resumes_through_a_new_gateway(home, tmp_path, monkeypatch):
    """The runner dies after deploy_env; `--resume` reconnects the env process, a new gateway
    registers it from the state, and the verifier passes through it."""
    monkeypatch.setenv("AGENT_ENV_WATCHDOG", "0")  # the env process must outlive the runner
    # the step that plays the crash kills its runner, which an isolated sandbox cannot reach
    monkeypatch.setenv("AGENT_ENV_SANDBOX_LOCAL_BWRAP", "")
    copy_example("notes-local", tmp_path / "b")
    marker, pid_file = tmp_path / "killed", tmp_path / "runner.pid"
    steps = json.loads((tmp_path / "b/tasks/notes.json").read_text())
    steps.insert(
        2,
        {
            "id": "crash",
            "type": "run_code",
            "script_artifact_id": "killer",
            "sandbox_name": "env:notes",
            "args": {"marker": str(marker), "runner_pid_file": str(pid_file)},
        },
    )
    write(tmp_path / "b", {"tasks/notes.json": steps, "artifacts/killer/killer.py": KILLER})
    from envs_helpers import start

    proc = start(home, "run", str(tmp_path / "b"), "--sandbox", "local")
    pid_file.write_text(str(proc.pid))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == -9, err
    [(_, env_url)] = URL.findall(err)
    assert answers(env_url), "the env process should survive its runner's SIGKILL"
    run_id = _run_id(home)
    done = agent_env(home, "run", "--resume", run_id)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passed" in done.stdout
    assert not answers(env_url)
    nothing_left(home)


def _run_id(home: Path) -> str:
    from test_run_cli import stored

    [run] = stored(home, "runs")
    return run["id"]


SIX_SERVER = """
import six
from agentenv_protocol import AgentEnvEnvironment, environment_card, tool


@environment_card(name="six")
class Six(AgentEnvEnvironment):
    @tool()
    def version(self) -> str:
        \"\"\"The six version this env runs with.\"\"\"
        return six.__version__


if __name__ == "__main__":
    Six().serve()
"""

VERIFY_SIX = """
import asyncio
from agentenv_protocol.client import EnvClient

def verify(mcp_url):
    base = mcp_url.rsplit("/mcp", 1)[0]
    async def go():
        async with EnvClient(base, mcp_path="/mcp") as env:
            return (await env.call_tool("version")).text
    got = asyncio.run(go())
    return [{"id": "six", "result": got == "1.16.0", "description": got}]
"""


def test_requirements_the_interpreter_lacks_get_a_cached_venv(home, tmp_path):
    """An env whose requirements this interpreter does not satisfy runs from a venv keyed by
    the requirements (agentenv_protocol from the checkout's wheel); the second run reuses it."""
    from agentenv_core_steps.envs.python import satisfied

    assert satisfied(["agentenv-framework-protocol>=1.0"])
    assert not satisfied(["six==1.16.0"]) or pytest.skip("six 1.16.0 is installed here")
    steps = [
        {"id": "deploy", "type": "deploy_env", "env_id": "e"},
        {"id": "check", "type": "env_outcome_verifier", "env_id": "e", "file_artifact_id": "v"},
    ]
    toml = 'command = "python server.py"\nrequirements = ["agentenv-framework-protocol>=0.1.372", "six==1.16.0"]\n'
    bundle = env_bundle(
        tmp_path / "b", toml, steps=steps, server=SIX_SERVER, extra={"artifacts/v/v.py": VERIFY_SIX}
    )
    first = agent_env(home, "run", str(bundle), "--sandbox", "local")
    assert first.returncode == 0, first.stdout + first.stderr
    venvs = [
        p
        for p in (
            Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "agentenv/venvs"
        ).iterdir()
        if p.is_dir()
    ]
    assert venvs
    t0 = time.monotonic()
    second = agent_env(home, "run", str(bundle), "--sandbox", "local")
    assert second.returncode == 0, second.stdout + second.stderr
    assert time.monotonic() - t0 < 30
    nothing_left(home)


def test_two_envs_with_the_same_tool_fail_closed_naming_both(home, tmp_path):
    notes = (Path(__file__).parents[1] / "examples/notes-local/envs/notes/server.py").read_text()
    steps = [
        {"id": "deploy-e", "type": "deploy_env", "env_id": "e"},
        {"id": "deploy-f", "type": "deploy_env", "env_id": "f"},
    ]
    bundle = env_bundle(
        tmp_path / "b",
        'command = "python server.py"\n',
        steps=steps,
        extra={"envs/f/env.toml": 'command = "python server.py"\n', "envs/f/server.py": notes},
    )
    done = agent_env(home, "run", str(bundle), "--sandbox", "local")
    out = done.stdout + done.stderr
    assert done.returncode == 1
    assert "failed at step 'deploy-f'" in out
    assert "served by both 'e' and 'f'" in out
    nothing_left(home)


VERIFY_TOOLS = """
import asyncio
from agentenv_protocol.client import EnvClient

def verify(mcp_url):
    base = mcp_url[: -len("/mcp")]
    async def names():
        async with EnvClient(base, mcp_path="/mcp") as env:
            return sorted(t.name for t in await env.list_tools())
    tools = asyncio.run(names())
    return [{"id": "notes-gone", "result": "add_note" not in tools, "description": str(tools)},
            {"id": "echo-kept", "result": "echo" in tools, "description": str(tools)}]
"""


def test_an_env_torn_down_mid_task_leaves_the_gateway(home, tmp_path):
    echo = (
        Path(__file__).parents[1] / "protocol/src/agentenv_protocol/examples/echo.py"
    ).read_text()
    steps = [
        {"id": "deploy-e", "type": "deploy_env", "env_id": "e"},
        {"id": "deploy-f", "type": "deploy_env", "env_id": "f"},
        {"id": "down", "type": "teardown_sandboxes", "env_ids": ["e"]},
        {
            "id": "check",
            "type": "env_outcome_verifier",
            "env_id": "f",
            "file_artifact_id": "v",
            "verifier_id": "tools",
        },
    ]
    bundle = env_bundle(
        tmp_path / "b",
        'command = "python server.py"\n',
        steps=steps,
        extra={
            "envs/f/env.toml": 'command = "python server.py"\n',
            "envs/f/server.py": echo,
            "artifacts/v/v.py": VERIFY_TOOLS,
        },
    )
    done = agent_env(home, "run", str(bundle), "--sandbox", "local", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    [record] = json.loads(done.stdout)["tasks"]
    assert record["outcome"] == "passed (tools: 1)", record["verifiers"]
    nothing_left(home)


def test_a_local_env_refuses_limits_it_cannot_enforce(home, tmp_path):
    steps = [{"id": "deploy", "type": "deploy_env", "env_id": "e", "memory_mb": 256}]
    bundle = env_bundle(tmp_path / "b", 'command = "python server.py"\n', steps=steps)
    done = agent_env(home, "run", str(bundle), "--sandbox", "local")
    assert done.returncode == 1
    assert "cannot enforce a memory limit" in done.stdout + done.stderr
    nothing_left(home)


def test_later_local_deploys_fork_from_the_warm_server_and_are_torn_down(tmp_path, monkeypatch):
    """In one process the second deploy of a local env forks from the fork server (no new
    interpreter), answers fast, carries its sandbox's marker, and dies with its sandbox."""
    import anyio

    import agentenv_core_steps.hooks
    from agent_env.plugins import PluginManager
    from agent_env.testing import run_task

    monkeypatch.setenv("AGENTENV_ENV_FORKSERVER", "1")
    # a fork of the warm server would escape an isolated sandbox's namespaces: isolated
    # sandboxes never fork (test_an_isolated_env_is_not_forked); this one is unisolated
    monkeypatch.setenv("AGENT_ENV_SANDBOX_LOCAL_BWRAP", "")
    home = tmp_path / "home"
    monkeypatch.setenv("AGENT_ENV_HOME", str(home))
    bundle = copy_example("notes-local", tmp_path / "b")
    plugins = PluginManager(autoload=False)
    plugins.register(agentenv_core_steps.hooks, "core-steps")
    urls, seconds = [], []
    for _ in range(2):
        record, state = anyio.run(run_task, plugins, bundle, home, "notes")
        assert record["status"] == "passed", record["failure"]
        seconds.append(state and record["steps"]["deploy"]["seconds"])
        assert state["envs"]["notes"]["warm_start"] is True
        urls.append(state["envs"]["notes"]["url"])
    assert not any(answers(u) for u in urls), "a forked env outlived its sandbox"
    assert seconds[1] < 1.0, seconds
    nothing_left(home)
