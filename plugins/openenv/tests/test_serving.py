"""What a server serves (the Task API, splits of a mapping and of evals), what build_app
refuses, import hygiene, and `agent-env openenv serve` from the CLI (Ctrl-C tears down)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from agent_env.errors import BundleError

ROOT = Path(__file__).resolve().parents[3]
NOTES = ROOT / "examples" / "notes-agent"
AGENT_ENV = str(Path(sys.executable).parent / "agent-env")
HELLO = ROOT / "kernel" / "src" / "agent_env" / "hello_bundle" / "hello"


def copy_notes(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    shutil.copytree(NOTES, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def with_chores_task(folder: Path) -> Path:
    steps = json.loads((folder / "tasks" / "groceries.json").read_text())
    steps[2]["prompt"] = "Save a note titled 'chores' listing: dishes."
    (folder / "tasks" / "chores.json").write_text(json.dumps(steps))
    return folder


def test_task_api_lists_the_served_tasks(openenv_home) -> None:
    from fastapi.testclient import TestClient

    from agent_env.openenv import build_app

    client = TestClient(build_app(NOTES))  # no lifespan needed for the Task API
    assert client.get("/list_environments").json() == ["notes-agent"]
    assert client.get("/notes-agent/splits").json() == [{"name": "all", "type": "validation"}]
    assert client.post("/notes-agent/num_tasks", json={"split": "all"}).json() == {"num_tasks": 1}
    task = client.post("/notes-agent/task", json={"split": "all", "index": 0}).json()["task"]
    assert set(task) == {"id", "name", "index", "prompt", "system_prompt", "agent"}
    assert (
        task["name"] == "groceries"
        and task["agent"] == "default-agent"
        and "milk" in task["prompt"]
    )
    bad = client.post("/notes-agent/task", json={"split": "all", "index": 5})
    assert bad.status_code == 400 and bad.json() == {"detail": "Invalid task index"}
    assert client.get("/other/splits").status_code == 404


def test_a_mapping_of_two_splits_lists_each_bundles_tasks(tmp_path, openenv_home) -> None:
    from fastapi.testclient import TestClient

    from agent_env.openenv import build_app

    test = with_chores_task(copy_notes(tmp_path, "notes.two"))
    client = TestClient(build_app({"train": NOTES, "test": test}))
    env = "notes-agent+notes-two"
    assert client.get("/list_environments").json() == [env]
    assert client.get(f"/{env}/splits").json() == [
        {"name": "train", "type": "train"},
        {"name": "test", "type": "test"},
    ]
    names = lambda split: [  # noqa: E731
        t["name"] for t in client.post(f"/{env}/tasks", json={"split": split}).json()["tasks"]
    ]
    assert names("train") == ["groceries"]
    assert sorted(names("test")) == ["chores", "groceries"]
    ranged = client.post(f"/{env}/task_range", json={"split": "test", "start": 1}).json()
    assert [t["index"] for t in ranged["tasks"]] == [1]


def test_evals_are_splits_and_an_eval_named_all_is_refused(tmp_path, openenv_home) -> None:
    from fastapi.testclient import TestClient

    from agent_env.openenv import build_app

    folder = with_chores_task(copy_notes(tmp_path, "notes-evals"))
    (folder / "evals").mkdir()
    (folder / "evals" / "smoke.toml").write_text('tasks = ["chores"]\n')
    client = TestClient(build_app(folder))
    splits = [s["name"] for s in client.get("/notes-evals/splits").json()]
    assert splits == ["all", "smoke"]
    smoke = client.post("/notes-evals/tasks", json={"split": "smoke"}).json()["tasks"]
    assert [(t["name"], t["index"]) for t in smoke] == [("chores", 0)]
    (folder / "evals" / "all.toml").write_text('tasks = ["groceries"]\n')
    with pytest.raises(BundleError, match="eval 'all' has the name of the split"):
        build_app(folder)


def test_build_app_refuses_what_it_cannot_serve(openenv_home) -> None:
    from agent_env.openenv import build_app

    with pytest.raises(BundleError, match="no task can be served as an OpenEnv env") as refused:
        build_app(HELLO)  # no agent is prompted
    assert str(refused.value) == (  # each left-out task on its own line, not a list's repr
        "no task can be served as an OpenEnv env\n"
        "  - left out: task 'hello': it prompts no agent, so there is no turn to play"
    )
    with pytest.raises(ValueError, match="records no score at step or verifier 'nope'"):
        build_app(NOTES, reward="nope")
    with pytest.raises(ValueError, match="reward= is a verifier id"):
        build_app(NOTES, reward=3)
    served = build_app(NOTES, reward="state").state.agentenv_runtime.served
    task = served.splits["all"][0]
    record = {"verifiers": {"env-state": {"score": 1}, "answer": {"score": 0}}, "scores": {}}
    assert served.reward_of(task, record) == 1.0  # step id `state` -> verifier `env-state`
    served = build_app(NOTES, reward=lambda s: min(s.values())).state.agentenv_runtime.served
    assert served.reward_of(task, record) == 0.0


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_the_cli_and_plugin_hooks_do_not_import_openenv() -> None:
    code = (
        "import sys, agent_env.cli, agentenv_openenv.hooks, agent_env.openenv;"
        "from agent_env.plugins import get_plugin_manager;"
        "get_plugin_manager().agents.get('openenv');"
        "bad=[m for m in ('openenv','gradio','fastapi') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = _python(code)
    assert done.returncode == 0, done.stdout + done.stderr


def test_without_the_plugin_build_app_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['agentenv_openenv.app'] = None\n"
        "from agent_env.openenv import build_app\n"
        "try:\n    build_app('x')\nexcept ImportError as e:\n    print(e)\n"
    )
    done = _python(code)
    assert "pip install 'agentenv-framework[openenv]'" in done.stdout, done.stderr


def test_the_openenv_agent_kind_outside_a_server_says_what_it_is(openenv_home) -> None:
    done = subprocess.run(
        [AGENT_ENV, "run", str(NOTES), "--agent", "openenv"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert "played by an OpenEnv client" in done.stdout + done.stderr


@pytest.mark.timeout(300)
def test_serve_from_the_cli_and_ctrl_c_tears_the_open_episode_down(openenv_home) -> None:
    from openenv.core.generic_client import GenericEnvClient

    agent_env = [AGENT_ENV]
    bad = subprocess.run(
        [*agent_env, "openenv", "serve", "--split", "train"], capture_output=True, text=True
    )
    assert bad.returncode != 0 and "is not NAME=SPEC" in bad.stderr
    token = "cli-t0ken"  # from the environment, as a trainer's launcher would pass it
    proc = subprocess.Popen(
        [*agent_env, "openenv", "serve", str(NOTES), "--port", "0", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "AGENT_ENV_OPENENV_TOKEN": token},
    )
    try:
        ready = json.loads(proc.stdout.readline())
        assert ready["env_name"] == "notes-agent" and ready["splits"] == {"all": 1}
        assert ready["token_required"] is True
        assert httpx.post(f"{ready['url']}/reset", json={}).status_code == 401

        async def start() -> str:
            headers = {"Authorization": f"Bearer {token}"}
            async with GenericEnvClient(base_url=ready["url"], headers=headers) as env:
                r = await env.reset(split="all", index=0)
                assert r.done is False
                proc.send_signal(signal.SIGINT)  # with the episode open
                return r.metadata["instance_id"]

        instance = anyio.run(start)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    said = proc.stderr.read()
    assert "a bearer token is required" in said and "no --token" not in said, said
    shown = subprocess.run(
        [*agent_env, "runs", "show", instance, "--json"], capture_output=True, text=True
    )
    record = json.loads(shown.stdout)["instance"]
    assert record["status"] == "cancelled", shown.stdout + shown.stderr
    assert record["agent"] == "openenv" and record["task"]["version"] == 1
    live = subprocess.run([*agent_env, "sandbox", "list", "--json"], capture_output=True, text=True)
    assert json.loads(live.stdout) == [], live.stdout


@pytest.mark.timeout(300)
def test_end_turn_answers_the_next_prompt_of_a_two_turn_task(tmp_path, openenv_home) -> None:
    from openenv.core.generic_client import GenericEnvClient

    from agent_env.openenv import build_app
    from agentenv_protocol.serving import serve_in_thread

    folder = copy_notes(tmp_path, "notes-two-turns")
    steps = json.loads((folder / "tasks" / "groceries.json").read_text())
    steps.insert(
        3, {"id": "ask2", "type": "prompt_agent", "prompt_id": "ask2", "prompt": "Now say bye."}
    )
    (folder / "tasks" / "groceries.json").write_text(json.dumps(steps))
    with serve_in_thread(build_app(folder, reward="answer"), startup_timeout=60) as server:

        async def main() -> None:
            async with GenericEnvClient(base_url=server.url) as env:
                r = await env.reset(task="groceries")
                assert "shopping list" in r.metadata["prompt"]
                r = await env.step(
                    {"type": "call_tool", "tool_name": "end_turn", "arguments": {"response": "ok"}}
                )
                assert r.done is False
                assert r.observation["result"]["prompt"] == "Now say bye."
                assert (await env.state())["turn"] == "ask2"
                r = await env.step(
                    {
                        "type": "call_tool",
                        "tool_name": "end_turn",
                        "arguments": {"response": "bye"},
                    }
                )
                # reward="answer": the `answer` verifier read the first turn's reply ("ok")
                assert r.done is True and r.reward == 0.0
                assert set(r.metadata["scores"]) == {"env-state", "answer", "tool-calls"}

        anyio.run(main)
