"""`agent-env completion bash|zsh|fish`: the shell completion script (click's completion)."""

from __future__ import annotations

import click


@click.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the completion script for SHELL; e.g. add `eval "$(agent-env completion bash)"`
    to ~/.bashrc (zsh: ~/.zshrc; fish: `agent-env completion fish | source`)."""
    from click.shell_completion import get_completion_class

    root = click.get_current_context().find_root()
    cls = get_completion_class(shell)
    assert cls is not None
    comp = cls(root.command, {}, "agent-env", "_AGENT_ENV_COMPLETE")
    click.echo(comp.source())
