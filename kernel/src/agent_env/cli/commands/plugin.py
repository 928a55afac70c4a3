"""`agent-env plugin list|show|check`: what is installed, what each plugin registered, what broke.

Plugins add subcommands through `agentenv_register_subcommands`: `add` and `remove` come with
agentenv-plugin-lifecycle, `new` with agentenv-scaffold (both in a plain install); without
them the command names the package to install."""

from __future__ import annotations

from typing import Any

import click

from agent_env.cli.lazy import ExtensibleGroup
from agent_env.cli.output import emit_json, err, table
from agent_env.errors import PluginError
from agent_env.plugins import PluginInfo, get_plugin_manager
from agent_env.plugins.loader import NATIVE, STATUSES


def _registered(info: PluginInfo) -> str:
    parts = [f"{kind}: {', '.join(names)}" for kind, names in sorted(info.registered.items())]
    # hooks that register nothing (a bundle source, a step wrapper) are listed by name
    other = [h.removeprefix("agentenv_") for h in info.hooks if "_register_" not in h]
    if other:
        parts.append(f"hooks: {', '.join(other)}")
    text = "; ".join(parts)
    if info.format != NATIVE:  # e.g. "legacy": written for the existing product's groups
        return f"({info.format} format) {text}".rstrip()
    return text


def _describe(import_classes: bool = False) -> tuple[list[PluginInfo], dict[str, str]]:
    return get_plugin_manager().describe(import_classes=import_classes)


@click.group(cls=ExtensibleGroup)
def plugin() -> None:
    """List, show and check plugins; plugins add more (add, remove, new)."""


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
