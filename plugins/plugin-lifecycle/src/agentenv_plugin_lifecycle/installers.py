"""The commands each installer runs to add and remove distributions, and the one-package
commands used to restore an exact set of distributions on rollback."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any

from agent_env.errors import PluginError
from agentenv_plugin_lifecycle.environment import PIPX, UV_PROJECT, UV_TOOL, Environment


def shell(cmd: list[str]) -> str:
    return " ".join(shlex.quote(c) for c in cmd)


def index_args(find_links: tuple[str, ...], no_index: bool) -> list[str]:
    args = [arg for link in find_links for arg in ("--find-links", link)]
    return args + (["--no-index"] if no_index else [])


def _receipt(env: Environment) -> dict[str, Any]:
    import tomllib

    return tomllib.loads(env.state_files[0].read_text(encoding="utf-8")).get("tool", {})


def _receipt_requirement(entry: dict[str, Any]) -> tuple[str, str]:
    """(`--with` or `--with-editable`, requirement) for one `uv-receipt.toml` requirement."""
    name = entry["name"] + (f"[{','.join(entry['extras'])}]" if entry.get("extras") else "")
    if entry.get("editable") and entry.get("editable") is not True:
        return "--with-editable", str(entry["editable"])
    for key in ("path", "directory"):
        if entry.get(key):
            return ("--with-editable" if entry.get("editable") else "--with"), str(entry[key])
    if entry.get("url"):
        return "--with", f"{name} @ {entry['url']}"
    if entry.get("git"):
        return "--with", f"{name} @ git+{entry['git']}"
    marker = f" ; {entry['marker']}" if entry.get("marker") else ""
    return "--with", name + str(entry.get("specifier") or "") + marker


def uv_tool_install(
    env: Environment, extra: list[str], drop: set[str], index: list[str]
) -> list[str]:
    """`uv tool install MAIN --with ...` keeping the receipt's requirements except `drop`, plus
    `extra` (uv syncs the tool environment exactly, so what only `drop` needed goes too)."""
    from agentenv_plugin_lifecycle.specs import normalize

    tool = _receipt(env)
    main: list[str] = []
    withs: list[str] = []
    for entry in tool.get("requirements", []):
        flag, req = _receipt_requirement(entry)
        if normalize(entry["name"]) == normalize(env.owner or ""):
            main = [req] if flag == "--with" else ["--editable", req]
        elif normalize(entry["name"]) not in drop:
            withs += [flag, req]
    if not main:
        raise PluginError(f"{env.state_files[0]}: no requirement for the tool {env.owner!r}")
    cmd = [env.low_level[1] or "uv", "tool", "install", *main, *withs]
    for req in extra:
        cmd += ["--with", req]
    if tool.get("python"):
        cmd += ["--python", str(tool["python"])]
    return cmd + index


def _pipx() -> str:
    found = shutil.which("pipx")
    if not found:
        raise PluginError("this environment belongs to pipx but `pipx` is not on PATH")
    return found


def add_command(
    env: Environment, installs: list[str], find_links: tuple[str, ...] = (), no_index: bool = False
) -> list[str]:
    """The owning installer's command that adds `installs` to the environment."""
    index = index_args(find_links, no_index)
    if env.kind == UV_TOOL:
        return uv_tool_install(env, installs, set(), index)
    if env.kind == PIPX:
        cmd = [_pipx(), "inject", env.owner or "", *installs]
        return cmd + (["--pip-args", shell(index)] if index else [])
    if env.kind == UV_PROJECT:
        return [env.low_level[1] or "uv", "add", "--project", str(env.project), *index, *installs]
    return low_install(env, installs, index)


def remove_command(env: Environment, names: list[str], orphans: list[str]) -> list[str]:
    """The owning installer's command that removes `names` (and, where we compute them,
    `orphans`: dependencies nothing else needs)."""
    if env.kind == UV_TOOL:
        return uv_tool_install(env, [], set(names), [])
    if env.kind == PIPX:
        return [_pipx(), "uninject", env.owner or "", *names]
    if env.kind == UV_PROJECT:
        _direct_dependencies(env, names)
        return [env.low_level[1] or "uv", "remove", "--project", str(env.project), *names]
    return low_uninstall(env, [*names, *orphans])


def _direct_dependencies(env: Environment, names: list[str]) -> None:
    """`uv remove` only removes the project's own dependencies: refuse anything else."""
    import tomllib

    from packaging.requirements import InvalidRequirement, Requirement

    from agentenv_plugin_lifecycle.specs import normalize

    pyproject = Path(env.project or ".") / "pyproject.toml"
    deps = (
        tomllib.loads(pyproject.read_text(encoding="utf-8"))
        .get("project", {})
        .get("dependencies", [])
    )
    direct = set()
    for dep in deps:
        try:
            direct.add(normalize(Requirement(dep).name))
        except InvalidRequirement:
            continue
    missing = [n for n in names if normalize(n) not in direct]
    if missing:
        raise PluginError(
            f"{', '.join(missing)} is not a dependency of the uv project {env.project} (installed "
            f"some other way), so `uv remove` cannot remove it; run: "
            + shell(low_uninstall(env, missing))
        )


def low_install(env: Environment, reqs: list[str], index: list[str]) -> list[str]:
    tool, uv = env.low_level
    if tool == "uv":
        return [uv or "uv", "pip", "install", "--python", str(env.python), *index, *reqs]
    return [str(env.python), "-m", "pip", "install", "--disable-pip-version-check", *index, *reqs]


def low_uninstall(env: Environment, names: list[str]) -> list[str]:
    tool, uv = env.low_level
    if tool == "uv":
        return [uv or "uv", "pip", "uninstall", "--python", str(env.python), *names]
    return [str(env.python), "-m", "pip", "uninstall", "-y", "--disable-pip-version-check", *names]


def resync_command(env: Environment) -> list[str] | None:
    """After the installer's own files are restored, the command that makes the environment
    match them again (None: the one-package commands do it)."""
    if env.kind == UV_TOOL:
        return uv_tool_install(env, [], set(), [])
    if env.kind == UV_PROJECT:
        return [
            env.low_level[1] or "uv",
            "sync",
            "--project",
            str(env.project),
            "--frozen",
            "--inexact",
        ]
    return None


def user_install_hint(env: Environment, installs: list[str]) -> str:
    """What the user would run to install `installs` here without agent-env."""
    if env.kind == UV_TOOL:
        return f"uv tool install {env.owner} --with " + " --with ".join(map(shlex.quote, installs))
    if env.kind == PIPX:
        return f"pipx inject {env.owner} " + " ".join(map(shlex.quote, installs))
    if env.kind == UV_PROJECT:
        return f"uv add --project {shlex.quote(str(env.project))} " + " ".join(
            map(shlex.quote, installs)
        )
    return shell([str(Path(env.python)), "-m", "pip", "install", *installs])


def user_upgrade_hint(env: Environment, name: str) -> str:
    """How the user upgrades agent-env's own distribution `name` here."""
    if env.kind == UV_TOOL:
        return f"uv tool upgrade {env.owner}"
    if env.kind == PIPX:
        return f"pipx upgrade {env.owner}"
    if env.kind == UV_PROJECT:
        return (
            f"uv lock --project {shlex.quote(str(env.project))} --upgrade-package {name} && uv sync"
        )
    return shell([str(env.python), "-m", "pip", "install", "--upgrade", name])
