"""`agent-env entity KIND ...`: every entity kind, the kernel's and the ones plugins declare
(`agentenv_register_entity_kinds`), with list, show, get, put and validate; `entity kinds`
lists them. A plugin's kind needs no kernel change and no command of its own."""

from __future__ import annotations

import importlib
from typing import Any

import click

from agentenv_stored_entities.commands.group import echo_json, make_group

#: The kernel's kinds -> the group that manages them (also `agent-env <kind>`).
BUILTIN_GROUPS = {
    "task": "agentenv_stored_entities.commands.task:task",
    "eval": "agentenv_stored_entities.commands.eval:eval_group",
    "env": "agentenv_stored_entities.commands.env:env",
    "agent": "agentenv_stored_entities.commands.agent:agent",
    "artifact": "agentenv_stored_entities.commands.artifact:artifact",
    "skill": "agentenv_stored_entities.commands.artifact:skill",
}


def _declared() -> Any:
    from agent_env.plugins import get_plugin_manager

    return get_plugin_manager().registry("entity_kinds")


class EntityGroup(click.Group):
    """Subcommands are `kinds` and one group per declared kind, built on demand; the kernel's
    kinds resolve too (their groups at the root)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        # the kernel's kinds resolve here too, but are listed (and documented) at the root
        return sorted({*super().list_commands(ctx), *_declared().names()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is not None:
            return found
        if cmd_name in BUILTIN_GROUPS:
            module, _, attr = BUILTIN_GROUPS[cmd_name].partition(":")
            group: click.Command = getattr(importlib.import_module(module), attr)
            return group
        declared = _declared()
        if cmd_name not in declared:
            return None
        decl = declared.get(cmd_name)
        help_text = (
            decl.help or f"Stored {cmd_name}s (declared by plugin {declared.owner(cmd_name)})."
        )
        return make_group(
            cmd_name, f"{help_text} List, show, put and validate them.", declared=decl
        )

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if not name.startswith("-") and self.get_command(ctx, name) is None:
            from agent_env.suggest import did_you_mean

            known = sorted({*BUILTIN_GROUPS, *_declared().names()})
            ctx.fail(
                f"no entity kind {name!r}{did_you_mean(name, known)}; kinds: {', '.join(known)}"
            )
        return super().resolve_command(ctx, args)


@click.group("entity", cls=EntityGroup)
def entity() -> None:
    """Stored entities of the kinds plugins declare: `agent-env entity KIND
    list|show|get|put|validate` (`entity kinds` lists every kind; the kernel's kinds also
    answer here, as `agent-env task ...` etc.)."""


@entity.command("kinds")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def kinds(as_json: bool) -> None:
    """List the entity kinds: the kernel's and the ones installed plugins declare."""
    declared = _declared()
    rows = [{"kind": k, "owner": "kernel", "folder": None, "help": ""} for k in BUILTIN_GROUPS]
    for name in declared.names():
        decl = declared.get(name)
        rows.append(
            {
                "kind": name,
                "owner": declared.owner(name),
                "folder": decl.folder_name,
                "help": decl.help,
            }
        )
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        folder = f"  {row['folder']}/" if row["folder"] else ""
        click.echo(f"{row['kind']}  {row['owner']}{folder}  {row['help']}".rstrip())
