"""A project with recorded runs, made once per session through the real CLI: `hello`, the
`notes-agent` example with its oracle (an env server, gateway tool calls, verifiers), `graded`
(the tool-loop agent on a scripted model: tokens and dollars, per-call rewards, the notes env
snapshotted before and after its prompt), `checks`
(two trials with seed values: three verifiers that pass every trial, one trial and none, and a
task that fails at a step before any verifier recorded a result), `fruit-a` and `fruit-b` (one
bundle, two seed tables: trials 0 and 2 pass only in B, trial 1 only in A), and a bundle whose
task sleeps (for cancelling). Tests serve it with the real app."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
AGENT_ENV = str(Path(sys.executable).parent / "agent-env")

SLOW_TASK = [
    {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"},
    {
        "id": "wait",
        "type": "verify_sandbox",
        "sandbox_name": "box",
        "verifier_id": "waited",
        "criteria": [
            {
                "id": "slept",
                "type": "bash_cmd_succeeds",
                "criterion": "slept",
                "bash_cmd": "sleep 1717",
            }
        ],
    },
]


def _check(verifier: str, *criteria: tuple[str, str]) -> dict[str, Any]:
    return {
        "id": verifier,
        "type": "verify_sandbox",
        "sandbox_name": "box",
        "verifier_id": verifier,
        "criteria": [
            {"id": cid, "type": "bash_cmd_succeeds", "criterion": cmd, "bash_cmd": cmd}
            for cid, cmd in criteria
        ],
    }


BOX = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"}
#: Trial 0 (word kiwi) scores ready 1, word 0, strict 0; trial 1 (banana) 1, 1, 0.
MIXED_TASK = [
    BOX,
    _check("ready", ("ok", "true")),
    _check("word", ("banana", "test {word} = banana")),
    _check("strict", ("yes", "true"), ("no", "false")),
]
#: Fails at step 'look' (no such sandbox) before any verifier recorded a result.
BROKEN_TASK = [BOX, {**_check("look", ("ok", "true")), "sandbox_name": "nobox"}]


def seed_words(*words: str) -> str:
    return "".join(f'[[trial]]\nword = "{w}"\n\n' for w in words)


#: The notes env (as `memo`) snapshotted before and after the tool-loop agent's prompt (the scripted model
#: server answers a list_notes call, an add_note call, then text: 11 prompt and 7 completion
#: tokens per model call), each call scored by a call_reward_verifier.
GRADED_TASK = [
    {"id": "env", "type": "deploy_env", "env_id": "memo"},
    {"id": "agent", "type": "deploy_agent", "env_ids": ["memo"]},
    {"id": "before", "type": "snapshot_task"},
    {"id": "ask", "type": "prompt_agent", "prompt_id": "ask", "prompt": "Save my list."},
    {"id": "after", "type": "snapshot_task"},
    {
        "id": "per-call",
        "type": "call_reward_verifier",
        "prompt_id": "ask",
        "verifier_id": "per-call",
        "rules": [{"tool": "add_note", "arguments": {"title": "groceries"}, "score": 1}],
        "default": 0.25,
    },
]
#: One tool call per model turn: two calls in one turn may reach the gateway in either order.
GRADED_MODEL = [
    {"tool_calls": [{"name": "list_notes", "arguments": {}}]},
    {
        "tool_calls": [
            {"name": "add_note", "arguments": {"title": "groceries", "body": "milk, eggs"}}
        ]
    },
    {"content": "Saved the note 'groceries'."},
]
#: Three model calls of the graded run: 33 prompt and 21 completion tokens, $0.75 at these
#: prices; local sandboxes are priced at nothing (every run of the project is priced).
PRICES = """
[prices.models."scripted-1"]
input = 10000.0
output = 20000.0

[prices.sandboxes]
local = 0.0
"""

SEEDS = '[[trial]]\nseed = 7\nword = "kiwi"\n\n[[trial]]\nseed = 8\nword = "banana"\n'


class Project:
    """The project folder (with `.agentenv/config.toml`), its home and the recorded runs."""

    def __init__(self, root: Path):
        self.root = root
        self.home = root / "home"
        self.runs: dict[str, str] = {}
        self.trials: dict[str, str] = {}
        self.recorded: dict[str, dict[str, Any]] = {}
        self.agent_env = AGENT_ENV

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
        env["AGENT_ENV_HOME"] = str(self.home)
        return env

    def cli(
        self, *args: str, timeout: float = 300, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            [AGENT_ENV, *args],
            cwd=self.root,
            env={**self.env(), **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def record(
        self, name: str, *args: str, code: int = 0, env: dict[str, str] | None = None
    ) -> dict[str, Any]:
        done = self.cli("run", *args, "--json", env=env)
        assert done.returncode == code, done.stderr
        data = json.loads(done.stdout)
        self.runs[name] = data["run_id"]
        self.trials[name] = data["tasks"][0]["id"]
        self.recorded[name] = data
        return data


@pytest.fixture(scope="session")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("explorer-project")
    (root / ".agentenv").mkdir()
    (root / ".agentenv" / "config.toml").write_text(PRICES)
    project = Project(root)
    project.home.mkdir()
    shutil.copytree(REPO / "examples" / "notes-agent", root / "notes-agent")
    (root / "slow" / "tasks").mkdir(parents=True)
    (root / "slow" / "tasks" / "slow.json").write_text(json.dumps(SLOW_TASK))
    project.record("hello", "hello")
    project.record("notes", "notes-agent", "--agent", "oracle")
    # the notes env under another name (the entity tests look the notes env up by name)
    notes_env = REPO / "examples" / "notes-agent" / "envs" / "notes"
    shutil.copytree(notes_env, root / "graded" / "envs" / "memo")
    (root / "graded" / "tasks").mkdir()
    (root / "graded" / "tasks" / "graded.json").write_text(json.dumps(GRADED_TASK))
    from agentenv_protocol.agent.testing import ScriptedModelServer

    with ScriptedModelServer(GRADED_MODEL) as model:
        env = {"LITELLM_BASE_URL": model.base_url}
        project.record("graded", "graded", "--model", "scripted-1", code=1, env=env)
    shutil.copytree(REPO / "examples" / "mail-triggers", root / "mail-triggers")
    project.record("triggers", "mail-triggers")
    (root / "checks" / "tasks").mkdir(parents=True)
    (root / "checks" / "tasks" / "mixed.json").write_text(json.dumps(MIXED_TASK))
    (root / "checks" / "tasks" / "broken.json").write_text(json.dumps(BROKEN_TASK))
    (root / "checks" / "seeds.toml").write_text(SEEDS)
    project.record("checks", "checks", "--trials", "2", code=1)
    (root / "fruit" / "tasks").mkdir(parents=True)
    pick = [
        BOX,
        _check("ready", ("ok", "true")),
        _check("word", ("banana", "test {word} = banana")),
    ]
    (root / "fruit" / "tasks" / "pick.json").write_text(json.dumps(pick))
    (root / "fruit-a.toml").write_text(seed_words("kiwi", "banana", "kiwi"))
    (root / "fruit-b.toml").write_text(seed_words("banana", "kiwi", "banana"))
    for name in ("fruit-a", "fruit-b"):
        project.record(name, "fruit", "--trials", "3", "--seeds", f"{name}.toml", code=1)
    return project


@pytest.fixture
def in_project(project: Project, monkeypatch: pytest.MonkeyPatch) -> Project:
    """The current process sees the project's home and folder (for an in-process app)."""
    monkeypatch.chdir(project.root)
    for key in [k for k in os.environ if k.startswith("AGENT_ENV_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("AGENT_ENV_HOME", str(project.home))
    return project


@pytest.fixture
def client_factory(in_project: Project) -> Any:
    """`client_factory(bind_host=..., token=...)`: a context-managed client with options."""
    import contextlib

    return lambda **options: contextlib.contextmanager(make_client)(in_project, **options)


@pytest.fixture
def client(in_project: Project) -> Iterator[Any]:
    """A `TestClient` of the explorer over the project's stores, as a loopback browser."""
    yield from make_client(in_project)


def make_client(project: Project, **options: Any) -> Iterator[Any]:
    import anyio
    from starlette.testclient import TestClient

    from agent_env import results
    from agentenv_explorer.app import create_app

    stores = anyio.run(results.open_configured_stores, project.root)
    app = create_app(stores, cwd=project.root, log_dir=project.home / "explorer-runs", **options)
    base = options.get("bind_host", "127.0.0.1")
    with TestClient(app, base_url=f"http://{base}:8234") as client:
        yield client


@pytest.fixture(scope="session")
def start_up() -> Any:
    """`start_up(project)`: see `start_explorer`."""
    return start_explorer


def start_explorer(project: Project) -> tuple[subprocess.Popen, str, str]:
    """`agent-env up` on a free loopback port in the project, answering; (process, base URL,
    the token it printed in its URL). The caller stops it (SIGINT)."""
    import json
    import time
    import urllib.request

    proc = subprocess.Popen(
        [project.agent_env, "up", "--port", "0", "--json"],
        cwd=project.root,
        env=project.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.kill()
        raise AssertionError(f"agent-env up printed no URL: {proc.communicate()[1]}")
    base, _, token = json.loads(line)["url"].partition("/?token=")
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{base}/health?token={token}", timeout=2)
            return proc, base, token
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(
                    f"agent-env up did not answer: {proc.communicate()[1]}"
                ) from None
            time.sleep(0.1)
