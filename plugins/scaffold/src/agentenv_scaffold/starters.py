"""Starting points `agent-env init` writes: an env (two tools and the data plane), a task that
deploys it and passes with the scripted agent, and a bundle holding both.

`plan_env`, `plan_task` and `plan_bundle` return the files to write (path relative to the
target folder -> text); `write_new` writes them only when none exists yet.
"""

from __future__ import annotations

import re
from importlib.resources import files as resource_files
from pathlib import Path
from string import Template

from agent_env.errors import ConfigError

#: What a scaffolded name may be: it names a folder, an env id and a task id.
NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,62}$")


def check_name(name: str, what: str) -> str:
    """`name`, or ConfigError saying what a valid one looks like."""
    if not NAME_PATTERN.match(name):
        suggestion = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-_")
        hint = f" (did you mean {suggestion!r}?)" if NAME_PATTERN.match(suggestion) else ""
        raise ConfigError(
            f"{what} name {name!r}: use a letter, then letters, digits, '-' or '_' "
            f"(at most 63 characters){hint}"
        )
    return name


def _render(template: str, **values: str) -> str:
    text = (
        resource_files("agentenv_scaffold")
        .joinpath("templates", template)
        .read_text(encoding="utf-8")
    )
    return Template(text).substitute(values)


def _class_name(name: str) -> str:
    words = re.split(r"[-_]+", name)
    return "".join(w[:1].upper() + w[1:] for w in words if w) + "Env"


def plan_env(name: str) -> dict[str, str]:
    """An env folder `envs/<name>/`: env.toml (a local command) and server.py."""
    check_name(name, "env")
    values = {"name": name, "class_name": _class_name(name)}
    return {
        f"envs/{name}/env.toml": _render("env/env.toml.tmpl", **values),
        f"envs/{name}/server.py": _render("env/server.py.tmpl", **values),
    }


def check_artifact(task: str) -> str:
    """The name of the verifier artifact a scaffolded task ships."""
    return "check_" + task.replace("-", "_")


#: The bundle agent a scaffolded task names: the `scripted` kind, playing the task's solution.
AGENT = "scripted"


def plan_task(name: str, env: str, root: Path | None = None) -> dict[str, str]:
    """`tasks/<name>.json` deploying env `env` (a scaffolded one), its verifier artifact, and
    the `scripted` agent folder unless `root` (the bundle folder) already has one."""
    check_name(name, "task")
    check_name(env, "env")
    check = check_artifact(name)
    planned = {
        f"tasks/{name}.json": _render(
            "task/task.json.tmpl", name=name, env=env, check=check, agent=AGENT
        ),
        f"artifacts/{check}/{check}.py": _render("task/check.py.tmpl", name=name),
    }
    if root is None or not (root / "agents" / AGENT).exists():
        planned[f"agents/{AGENT}/agent.toml"] = _render("agent/agent.toml.tmpl")
    return planned


def plan_bundle(name: str) -> dict[str, str]:
    """A bundle folder's contents: README.md, env `name` and task `name` that deploys it."""
    check_name(name, "bundle")
    return {
        "README.md": _render("bundle/README.md.tmpl", name=name),
        **plan_env(name),
        **plan_task(name, name),
    }


def write_new(root: Path, planned: dict[str, str]) -> list[Path]:
    """Write `planned` under `root`; ConfigError naming every file that already exists (then
    nothing is written). Returns the paths written."""
    targets = {root / rel: text for rel, text in planned.items()}
    existing = sorted(str(p) for p in targets if p.exists() or p.is_symlink())
    if existing:
        raise ConfigError(
            "refusing to overwrite existing files (nothing was written): " + ", ".join(existing)
        )
    written: list[Path] = []
    try:
        for path, text in targets.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "x", encoding="utf-8") as f:
                f.write(text)
            written.append(path)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    return written
