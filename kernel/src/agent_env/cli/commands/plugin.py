"""`agent-env plugin list|show|check|add|remove|new`: what is installed, what each plugin registered,
what broke; installing, removing and scaffolding plugins (logic in `agent_env.plugins.lifecycle`
and `agent_env.plugins.scaffold`)."""

from __future__ import annotations

from typing import Any

import click

from agent_env.cli.output import emit_json, err, table
from agent_env.errors import PluginError
from agent_env.plugins import PluginInfo, get_plugin_manager
from agent_env.plugins.loader import LEGACY, STATUSES


def _registered(info: PluginInfo) -> str:
    parts = [f"{kind}: {', '.join(names)}" for kind, names in sorted(info.registered.items())]
    # hooks that register nothing (a bundle source, a step wrapper) are listed by name
    other = [h.removeprefix("agentenv_") for h in info.hooks if "_register_" not in h]
    if other:
        parts.append(f"hooks: {', '.join(other)}")
    text = "; ".join(parts)
    if info.format == LEGACY:  # written for the existing product's entry-point groups
        return f"(legacy format) {text}".rstrip()
    return text


def _describe(import_classes: bool = False) -> tuple[list[PluginInfo], dict[str, str]]:
    return get_plugin_manager().describe(import_classes=import_classes)


@click.group()
def plugin() -> None:
    """List, show, check, add, remove and scaffold plugins."""


@plugin.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def list_plugins(as_json: bool) -> None:
    """Every plugin: distribution, version, status (ok/failed/disabled/incompatible/unsupported)
    and what it registered; plugins written for the existing product are marked legacy format."""
    infos, problems = _describe()
    if as_json:
        emit_json([i.to_dict() for i in infos])
    else:
        rows = [("NAME", "DISTRIBUTION", "VERSION", "STATUS", "REGISTERED")]
        for i in infos:
            rows.append((i.name, i.dist or "-", i.version or "-", i.status, _registered(i)))
        click.echo(table(rows))
        for i in infos:
            for error in i.errors:
                click.echo(f"{i.name}: {error}")
    for attr, problem in problems.items():
        err(f"registry {attr}: {problem}")


@plugin.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show_plugin(name: str, as_json: bool) -> None:
    """One plugin in detail (NAME is a plugin or distribution name)."""
    _describe()
    info = get_plugin_manager().get(name)
    if as_json:
        emit_json(info.to_dict())
        return
    fields: list[tuple[str, Any]] = [
        ("name", info.name),
        ("module", info.module),
        ("distribution", info.dist or "-"),
        ("version", info.version or "-"),
        ("builtin", "yes" if info.builtin else "no"),
        ("format", info.format),
        ("status", info.status),
        ("plugin API", info.api or "-"),
        ("hooks", ", ".join(info.hooks) or "-"),
    ]
    for kind, names in sorted(info.registered.items()):
        fields.append((kind, ", ".join(names)))
    for section, keys in sorted(info.config_sections.items()):
        fields.append((f"config [{section}]", ", ".join(sorted(keys)) or "-"))
    for error in info.errors:
        fields.append(("error", error))
    width = max(len(k) for k, _ in fields)
    for key, value in fields:
        click.echo(f"{key.ljust(width)}  {value}")


@plugin.command("check")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def check_plugins(as_json: bool) -> None:
    """Load every plugin and build every registry; exit 1 and say why when anything failed."""
    manager = get_plugin_manager()
    infos, registry_problems = _describe(import_classes=True)
    problems = [f"plugin {i.name!r}: {e}" for i in infos for e in i.errors]
    problems += [f"registry {attr}: {p}" for attr, p in registry_problems.items()]
    try:
        manager.check_pending()
    except Exception as exc:
        problems.append(f"unknown hooks: {exc}")
    counts = {s: sum(1 for i in infos if i.status == s) for s in STATUSES}
    if as_json:
        emit_json({"ok": not problems, "counts": counts, "problems": problems})
    else:
        for problem in problems:
            click.echo(problem)
        if not problems:
            click.echo(
                f"ok: {counts['ok']} plugins loaded ({counts['disabled']} disabled), "
                f"every registry builds"
            )
    if problems:
        raise PluginError(f"plugin check found {len(problems)} problem(s)")


def _asker(dry_run: bool, yes: bool) -> Any:
    def confirm(lines: list[str]) -> bool:
        for line in lines:
            click.echo(line)
        if dry_run:
            click.echo("dry run: nothing changed")
            return False
        if not yes and not click.confirm("Proceed?", default=False, err=True):
            raise click.Abort()
        return True

    return confirm


_dry_run = click.option("--dry-run", is_flag=True, help="Show the plan; change nothing.")
_yes = click.option("-y", "--yes", is_flag=True, help="Do not ask before changing anything.")
_lock_timeout = click.option(
    "--lock-timeout",
    type=float,
    default=600.0,
    show_default=True,
    help="Seconds to wait for another plugin add/remove here.",
)


@plugin.command("add")
@click.argument("specs", nargs=-1, required=True)
@_dry_run
@_yes
@click.option(
    "--find-links",
    multiple=True,
    metavar="DIR|URL",
    help="Also look for distributions here (passed to the installer); repeatable.",
)
@click.option("--no-index", is_flag=True, help="Do not use the package index.")
@_lock_timeout
def add_plugins(
    specs: tuple[str, ...],
    dry_run: bool,
    yes: bool,
    find_links: tuple[str, ...],
    no_index: bool,
    lock_timeout: float,
) -> None:
    """Install plugin SPECs (names, requirements, wheels, folders) with the installer that owns
    this environment; verify every plugin loads, else restore the previous distributions."""
    from agent_env.plugins.lifecycle import execute_add, plan_add

    plan = plan_add(list(specs), find_links=find_links, no_index=no_index)
    result = execute_add(plan, confirm=_asker(dry_run, yes), echo=err, lock_timeout=lock_timeout)
    if result is None:
        return
    for kind, items in result.changes.items():
        for item in items:
            click.echo(f"{kind}: {item}")
    click.echo(f"ok: added plugin(s) {', '.join(result.plugins) or '-'}; every plugin loads")


@plugin.command("remove")
@click.argument("names", nargs=-1, required=True)
@click.option(
    "--force", is_flag=True, help="Remove even when the config or stored entities use it."
)
@_dry_run
@_yes
@_lock_timeout
def remove_plugins(
    names: tuple[str, ...], force: bool, dry_run: bool, yes: bool, lock_timeout: float
) -> None:
    """Uninstall plugins (plugin or distribution NAMEs) and the dependencies only they needed."""
    from agent_env.plugins.lifecycle import execute_remove, plan_remove

    plan = plan_remove(list(names))
    if dry_run:
        for user in plan.users:
            click.echo(f"in use: {user}")
    result = execute_remove(
        plan,
        force=force or dry_run,
        confirm=_asker(dry_run, yes),
        echo=err,
        lock_timeout=lock_timeout,
    )
    if result is None:
        return
    for kind, items in result.items():
        for item in items:
            click.echo(f"{kind}: {item}")
    click.echo(f"ok: removed {', '.join(plan.dists)}; every other plugin loads")


@plugin.command("new")
@click.argument("name")
@click.option(
    "--dir",
    "parent",
    type=click.Path(file_okay=False),
    default=".",
    show_default=True,
    help="Create the package folder in this folder.",
)
def new_plugin(name: str, parent: str) -> None:
    """Create a plugin package NAME (pyproject, hooks.py, an example step type, tests, README)."""
    import importlib.util
    import shlex
    import sys
    from pathlib import Path

    from agent_env.plugins.scaffold import scaffold

    created = scaffold(name, Path(parent))
    click.echo(f"created {created.root}")
    for path in created.files:
        click.echo(f"  {path.relative_to(created.root)}")
    # The tests import agent_env: run them with the Python agent-env runs on, not the shell's.
    pytest = f"{shlex.quote(sys.executable)} -m pytest"
    click.echo(f"next: cd {created.root} && {pytest}   (then: agent-env plugin add {created.root})")
    if importlib.util.find_spec("pytest") is None:
        click.echo("  (pytest is not installed next to agent-env yet: install it there first)")
