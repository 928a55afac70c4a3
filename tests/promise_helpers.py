"""The bundle promise, as the tests check it: a bundle that fails validation exits 2 with one
`Error:` line naming the file, no traceback, and the state folder exactly as it was.

`base_bundle` writes a small valid local bundle that uses most of the format (an artifact with
its artifact.toml, a scripted agent folder with agent.toml, an eval, aliases, a seed table);
`state_of` reads everything a run could have written (documents, objects, leases, sandboxes)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

TASK: list[dict[str, Any]] = [
    {"id": "sandbox", "type": "deploy_sandbox", "sandbox_name": "hello", "sandbox_mode": "vm"},
    {
        "id": "load",
        "type": "load_artifact",
        "sandbox_name": "hello",
        "artifact_id": "greeting",
        "destination_path": "/app",
    },
    {
        "id": "verify",
        "type": "verify_sandbox",
        "sandbox_name": "hello",
        "verifier_id": "hello",
        "base_dir": "/app",
        "criteria": [
            {
                "id": "present",
                "type": "probe_file_exists",
                "criterion": "the greeting was loaded",
                "paths": ["greeting.txt"],
            },
            {
                "id": "says-hello",
                "type": "probe_file_contains",
                "paths": ["greeting.txt"],
                "expected": "^Hello",
            },
            {"id": "shell", "type": "bash_cmd_succeeds", "bash_cmd": "grep -q Hello greeting.txt"},
        ],
    },
    {"id": "teardown", "type": "teardown_sandboxes", "sandbox_names": ["hello"]},
]

#: A task the tests only validate (they run task `t`): it carries the nested shapes a run of
#: `t` never reaches, so a mutation there must be refused or change nothing.
EXTRA_TASK: list[dict[str, Any]] = [
    {"id": "env", "type": "deploy_env", "env_id": "notes"},
    {
        "id": "agent",
        "type": "deploy_agent",
        "a2a_agent_id": "replay",
        "env_ids": ["notes"],
        "skills": [{"name": "notes", "description": "how to take notes", "body": "Write."}],
    },
    {"id": "ask", "type": "prompt_agent", "prompt": "take a note", "prompt_id": "ask"},
    {
        "id": "answer",
        "type": "agent_prompt_response_verifier",
        "prompt_id": "ask",
        "verifier_id": "answer",
        "criteria": [{"type": "response_contains", "needles": ["done"]}],
    },
    {
        "id": "calls",
        "type": "tool_call_verifier",
        "prompt_id": "ask",
        "verifier_id": "calls",
        "criteria": [
            {"id": "wrote", "type": "tool_called", "tool": "write_note", "min_times": 1},
            {"type": "tool_call_count", "max": 5},
        ],
    },
]

FILES: dict[str, Any] = {
    "README.md": "# A bundle the promise tests mutate\n",
    "tasks/t.json": TASK,
    "artifacts/greeting/greeting.txt": "Hello, world\n",
    "artifacts/greeting/artifact.toml": 'type = "file"\ndescription = "the greeting"\n',
    "agents/replay/agent.toml": 'type = "scripted"\nscript = "solution.json"\n',
    "agents/replay/solution.json": json.dumps([{"response": "done"}]),
    "tasks/extra.json": EXTRA_TASK,
    "envs/notes/env.toml": 'description = "notes"\ncommand = ["python", "server.py"]\n',
    "envs/notes/server.py": "print('never started: the tests run task t only')\n",
    "evals/all.toml": 'tasks = ["t"]\n',
    "aliases.toml": 'quick = "t"\n',
    "seeds.toml": "seeds = [17]\n",
}


def write_files(root: Path, files: dict[str, Any]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content, indent=1))
    return root


def base_bundle(root: Path, **replace: Any) -> Path:
    """The valid bundle at `root`, with files replaced (`None` removes one)."""
    files = {**FILES, **{k.replace("__", "/"): v for k, v in replace.items()}}
    return write_files(root, {k: v for k, v in files.items() if v is not None})


def state_of(home: Path) -> dict[str, Any]:
    """Every record and file a run writes under `home`, comparable with `==`."""
    out: dict[str, Any] = {}
    db = home / "documents.sqlite3"
    if db.exists():
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            out["documents"] = sorted(
                conn.execute("SELECT collection, key, doc FROM documents").fetchall()
            )
        finally:
            conn.close()
    for sub in ("objects", "leases", "sandboxes"):
        folder = home / sub
        if folder.exists():
            out[sub] = sorted(
                (p.relative_to(folder).as_posix(), p.stat().st_size if p.is_file() else -1)
                for p in folder.rglob("*")
            )
    return out


def assert_refused(result: Any, *names: str) -> str:
    """Exit 2, a first stderr line `Error: ...`, no traceback, every one of `names` in the
    message; the message."""
    err = result.stderr
    assert result.exit_code == 2, (result.exit_code, result.stdout, err)
    assert "Traceback" not in err + result.stdout, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and lines[0].startswith("Error: "), err
    assert sum(line.startswith("Error:") for line in lines) == 1, err
    for name in names:
        assert name in err, (name, err)
    return err
