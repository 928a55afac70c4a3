"""Helpers for the agent end-to-end tests: run `agent-env` in a subprocess on a fresh home,
read its records back, and write small bundles that reuse the notes-agent env."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

AGENT_ENV = Path(sys.executable).with_name("agent-env")
ROOT = Path(__file__).resolve().parents[1]
NOTES_AGENT = ROOT / "examples" / "notes-agent"


def agent_env(
    home: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENT_ENV_", "LITELLM_", "OPENAI_"))
    }
    clean["AGENT_ENV_HOME"] = str(home)
    clean.update(env or {})
    return subprocess.run(
        [str(AGENT_ENV), *args],
        env=clean,
        cwd=home.parent,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_json(
    home: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[dict[str, Any], str]:
    done = agent_env(home, "run", *args, "--json", env=env)
    try:
        return json.loads(done.stdout), done.stderr
    except ValueError:
        raise AssertionError(
            f"exit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
        ) from None


def show_json(home: Path, ident: str) -> dict[str, Any]:
    done = agent_env(home, "runs", "show", ident, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def notes_bundle(
    tmp: Path,
    tasks: dict[str, list[dict[str, Any]]],
    agents: dict[str, dict[str, str]] | None = None,
) -> Path:
    """A bundle with the notes-agent env and artifacts, the given tasks and agent folders."""
    root = tmp / "bundle"
    shutil.copytree(NOTES_AGENT / "envs", root / "envs")
    shutil.copytree(NOTES_AGENT / "artifacts", root / "artifacts")
    (root / "tasks").mkdir(parents=True)
    for name, steps in tasks.items():
        (root / "tasks" / f"{name}.json").write_text(json.dumps(steps, indent=1))
    for name, files in (agents or {}).items():
        folder = root / "agents" / name
        folder.mkdir(parents=True)
        for rel, text in files.items():
            (folder / rel).write_text(text)
    return root


def groceries_steps(**deploy: Any) -> list[dict[str, Any]]:
    """The notes-agent task with extra `deploy_agent` fields."""
    steps = json.loads((NOTES_AGENT / "tasks" / "groceries.json").read_text())
    steps[1].update(deploy)
    return steps


TOOL_THEN_TEXT = [
    {
        "tool_calls": [
            {"name": "list_notes", "arguments": {}},
            {"name": "add_note", "arguments": {"title": "groceries", "body": "milk, eggs, bread"}},
        ]
    },
    {"content": "Done: your list is saved in the note 'groceries'."},
]
