"""`agent-env sandbox list|prune`: see the sandboxes agent-env holds, clean up what dead
processes left behind (lease files first, then every provider's own label-based reaping)."""

from __future__ import annotations

import click

from agent_env.cli.output import emit_json, emit_rows, err


def _manager():
    from agent_env.config import load_config
    from agent_env.paths import home
    from agent_env.plugins import get_plugin_manager
    from agent_env.sandboxes.manager import SandboxManager

    plugins = get_plugin_manager()
    return SandboxManager(plugins, load_config(plugins=plugins), home())


@click.group()
def sandbox() -> None:
    """List and clean up sandboxes."""


@sandbox.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_(as_json: bool) -> None:
    """List the sandboxes agent-env processes hold, with their owner and whether it is alive."""

    def line(row: dict) -> str:
        owner = f"pid {row['owner_pid']} ({'alive' if row['owner_alive'] else 'dead'})"
        return (
            f"{row['id']}  {row['provider']}  run {row['run_id'] or '-'}  "
            f"instance {row['task_instance_id'] or '-'}  {owner}"
        )

    emit_rows(_manager().lease_rows(), as_json, empty="no sandboxes", fmt=line)


@sandbox.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def prune(as_json: bool) -> int:
    """Tear down sandboxes whose owning agent-env process died, for every provider.

    Exits 1 when a provider could not be asked or a teardown failed.
    """
    import anyio

    manager = _manager()
    reaped = anyio.run(manager.prune)
    problems = list(manager.reap_errors)
    if as_json:
        emit_json({"removed": reaped, "problems": problems})
    else:
        for sandbox_id in reaped:
            click.echo(f"removed {sandbox_id}")
        click.echo(f"pruned {len(reaped)} sandbox(es)")
        for problem in problems:
            err(f"agent-env: warning: {problem}")
    return 1 if problems else 0
