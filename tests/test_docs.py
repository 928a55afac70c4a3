"""The user guide documents every CLI command (built-in and from installed plugins) and every
hookspec; a new command or hook without docs fails here."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from agent_env import hookspecs
from agent_env.errors import PluginError

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _docs_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(DOCS.rglob("*.md")))


def _commands() -> list[tuple[str, click.Command | None]]:
    """(`agent-env X Y`, its command) for every command the installed agent-env offers; the
    command is None when its module does not exist yet (its name is still checked)."""
    from agent_env.cli.root import build_cli

    root = build_cli()
    found: list[tuple[str, click.Command | None]] = []

    def walk(group: click.Group, ctx: click.Context, prefix: str) -> None:
        for name in group.list_commands(ctx):
            try:
                command = group.get_command(ctx, name)
            except PluginError:
                command = None
            found.append((f"{prefix} {name}", command))
            if isinstance(command, click.Group):
                walk(
                    command, click.Context(command, info_name=name, parent=ctx), f"{prefix} {name}"
                )

    walk(root, click.Context(root, info_name="agent-env"), "agent-env")
    return found


def _command_paths() -> list[str]:
    return [path for path, _ in _commands()]


def _mentioned(phrase: str, text: str) -> bool:
    words = phrase.split()
    return re.search(r"`" + r"\s+".join(map(re.escape, words)) + r"[`\s\[]", text) is not None


@pytest.mark.parametrize("path", _command_paths())
def test_every_command_is_documented(path):
    assert _mentioned(path, _docs_text()), (
        f"`{path}` is not documented under docs/ (see docs/cli.md)"
    )


HOOKS = sorted(n for n in dir(hookspecs) if n.startswith("agentenv_"))


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hookspec_is_documented(hook):
    text = (DOCS / "plugins.md").read_text(encoding="utf-8")
    assert re.search(rf"^### `{hook}\(", text, re.M), (
        f"hook {hook} has no section in docs/plugins.md"
    )


def test_the_walk_finds_the_kernel_commands():
    paths = _command_paths()
    for path in (
        "agent-env run",
        "agent-env plugin list",
        "agent-env plugin check",
        "agent-env config show",
    ):
        assert path in paths


def _long_options() -> list[str]:
    """`agent-env X Y --option` for every long option of every (leaf) command."""
    return [
        f"{path} {opt}"
        for path, command in _commands()
        if command is not None and not isinstance(command, click.Group)
        for param in command.params
        if isinstance(param, click.Option)
        for opt in param.opts
        if opt.startswith("--")
    ]


@pytest.mark.parametrize("option", _long_options())
def test_every_long_option_is_documented(option):
    flag = option.rsplit(" ", 1)[1]
    assert re.search(re.escape(flag) + r"(?![\w-])", _docs_text()), (
        f"`{option}` is not mentioned under docs/ (see docs/cli.md)"
    )
