"""`agent-env plugin list|show|check`: what is installed, what each plugin registered, what broke."""

from __future__ import annotations

import json
from typing import Any

import click

from agent_env.errors import PluginError
from agent_env.plugins import PluginInfo, get_plugin_manager


def _registered(info: PluginInfo) -> str:
    return "; ".join(f"{kind}: {', '.join(names)}" for kind, names in sorted(info.registered.items()))


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows
    )


def _describe() -> tuple[list[PluginInfo], dict[str, str]]:
    return get_plugin_manager().describe()


@click.group()
def plugin() -> None:
    """List, show and check the installed plugins."""


@plugin.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def list_plugins(as_json: bool) -> None:
    """Every plugin: distribution, version, status (ok/failed/disabled) and what it registered."""
    infos, problems = _describe()
    if as_json:
        click.echo(json.dumps([i.to_dict() for i in infos], indent=2))
    else:
        rows = [("NAME", "DISTRIBUTION", "VERSION", "STATUS", "REGISTERED")]
        for i in infos:
            rows.append((i.name, i.dist or "-", i.version or "-", i.status, _registered(i)))
        click.echo(_table(rows))
        for i in infos:
            for error in i.errors:
                click.echo(f"{i.name}: {error}")
    for attr, problem in problems.items():
        click.echo(f"registry {attr}: {problem}", err=True)


@plugin.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show_plugin(name: str, as_json: bool) -> None:
    """One plugin in detail (NAME is a plugin or distribution name)."""
    _describe()
    info = get_plugin_manager().get(name)
    if as_json:
        click.echo(json.dumps(info.to_dict(), indent=2))
        return
    fields: list[tuple[str, Any]] = [
        ("name", info.name),
        ("module", info.module),
        ("distribution", info.dist or "-"),
        ("version", info.version or "-"),
        ("builtin", "yes" if info.builtin else "no"),
        ("status", info.status),
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
    infos, registry_problems = _describe()
    problems = [f"plugin {i.name!r}: {e}" for i in infos for e in i.errors]
    problems += [f"registry {attr}: {p}" for attr, p in registry_problems.items()]
    try:
        manager.check_pending()
    except Exception as exc:
        problems.append(f"unknown hooks: {exc}")
    counts = {s: sum(1 for i in infos if i.status == s) for s in ("ok", "failed", "disabled")}
    if as_json:
        click.echo(json.dumps({"ok": not problems, "counts": counts, "problems": problems}, indent=2))
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
