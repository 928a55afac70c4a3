"""A click group whose commands are imported only when they run, so listing them stays cheap."""

from __future__ import annotations

import importlib
from typing import Any

import click

from agent_env.errors import PluginError
from agent_env.registry import PluginAttribution
from agent_env.suggest import did_you_mean

KERNEL = "agent-env"


class LazyGroup(PluginAttribution, click.Group):
    """`add_lazy_command(name, "module:attr", short_help)` registers a command by import path.

    `--help` lists lazy commands from their short help without importing them; a command whose
    module cannot be imported fails only when it is invoked, with an error naming the module.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lazy_commands: dict[str, tuple[str, str | None]] = {}
        self.owners: dict[str, str] = {}
        self._current_plugin: str | None = None

    def _claim(self, name: str) -> None:
        if name in self.commands or name in self.lazy_commands:
            raise PluginError(
                f"command {name!r} is already provided by {self.owners.get(name, KERNEL)!r}; "
                f"plugin {self._current_plugin or KERNEL!r} cannot add it again"
            )
        self.owners[name] = self._current_plugin or KERNEL

    def add_lazy_command(self, name: str, import_path: str, short_help: str | None = None) -> None:
        if ":" not in import_path:
            raise PluginError(
                f"command {name!r}: import path {import_path!r} must look like 'module:attribute'"
            )
        self._claim(name)
        self.lazy_commands[name] = (import_path, short_help)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        name = name or cmd.name
        if name is None:
            raise TypeError("Command has no name.")
        self._claim(name)
        super().add_command(cmd, name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(self.lazy_commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        if cmd_name not in self.lazy_commands:
            return None
        import_path, _ = self.lazy_commands[cmd_name]
        module_name, _, attr = import_path.partition(":")
        owner = self.owners.get(cmd_name, KERNEL)
        try:
            module = importlib.import_module(module_name)
            command = getattr(module, attr)
        except (ImportError, AttributeError) as exc:
            raise PluginError(
                f"command {cmd_name!r} (from {owner!r}) is not available: cannot load "
                f"{import_path!r}: {exc}"
            ) from exc
        if not isinstance(command, click.Command):
            raise PluginError(
                f"command {cmd_name!r} (from {owner!r}): {import_path!r} is not a click command"
            )
        del self.lazy_commands[cmd_name]
        click.Group.add_command(self, command, cmd_name)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in self.list_commands(ctx):
            missing = missing_plugin(" ".join([*ctx.command_path.split()[1:], name]))
            if missing:
                ctx.fail(missing)
            known = self.list_commands(ctx)
            hint = did_you_mean(name, [*known, *plugin_commands(ctx.command_path)])
            ctx.fail(f"No such command {name!r}{hint}. Commands: {', '.join(known)}")
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        limit = formatter.width - 6 - max((len(n) for n in self.list_commands(ctx)), default=0)
        for name in self.list_commands(ctx):
            if name in self.commands:
                cmd = self.commands[name]
                if cmd.hidden:
                    continue
                rows.append((name, cmd.get_short_help_str(limit)))
            else:
                rows.append((name, self.lazy_commands[name][1] or ""))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class ExtensibleGroup(LazyGroup):
    """A kernel command group plugins add subcommands to (`agentenv_register_subcommands`,
    with the group's name as `parent`: `plugin`, `runs`), asked on first use under each plugin
    manager (the group is module-level; embedders and tests swap managers)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._asked: Any = None
        self._from_plugins: set[str] = set()

    def _names(self) -> set[str]:
        return set(self.commands) | set(self.lazy_commands)

    def _add_plugin_subcommands(self) -> None:
        from agent_env.plugins import get_plugin_manager

        manager = get_plugin_manager()
        if self._asked is manager:
            return
        for name in self._from_plugins:
            self.commands.pop(name, None)
            self.lazy_commands.pop(name, None)
            self.owners.pop(name, None)
        self._asked = manager
        before = self._names()
        manager.register_subcommands(self.name or "", self)
        self._from_plugins = self._names() - before

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._add_plugin_subcommands()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self._add_plugin_subcommands()
        return super().get_command(ctx, cmd_name)


def plugin_commands(command_path: str) -> list[str]:
    """The commands in-tree plugins add under the group at `command_path` (`plugins.known`),
    installed or not: a typo of one gets its did-you-mean (`opnenv` -> `openenv`)."""
    from agent_env.plugins.known import commands_under

    return commands_under(" ".join(command_path.split()[1:]))


def missing_plugin(command: str) -> str | None:
    """Why `command` (a path such as "plugin add") is missing when an in-tree plugin provides
    it (`plugins.known`): not installed, the install command; installed but disabled, broken or
    not loaded, its status. None when no plugin provides it (a typo)."""
    from importlib.metadata import PackageNotFoundError, version

    from agent_env.plugins import get_plugin_manager
    from agent_env.plugins.known import distribution, install_command
    from agent_env.plugins.loader import DISABLED

    dist = distribution("command", command)
    if dist is None:
        return None
    where = f"command {command!r} comes with {dist}"
    for info in get_plugin_manager().plugins.values():
        if info.dist == dist:
            why = f": {'; '.join(info.errors)}" if info.errors else ""
            if info.status == DISABLED:
                why = " (--disable-plugin or AGENT_ENV_DISABLE_PLUGINS)"
            return f"{where} (plugin {info.name!r}), which is {info.status}{why}"
    try:
        version(dist)
    except PackageNotFoundError:
        return f"{where}, which is not installed; install it with: {install_command(dist)}"
    return (
        f"{where}, which is installed but not loaded (--no-plugins, or see `agent-env plugin list`)"
    )
