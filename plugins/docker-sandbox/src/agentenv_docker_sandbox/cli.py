"""`agent-env sandbox prune`: tear down what dead agent-env processes left behind, for every
installed provider (leases first, then each provider's own label-based `reap`)."""

from __future__ import annotations

import click


async def prune_all(plugins, config, home) -> tuple[list[str], list[str]]:
    """Reap orphans through the lease files and every provider; `(reaped ids, problems)`."""
    from agent_env.sandboxes.manager import SandboxManager

    manager = SandboxManager(plugins, config, home)
    reaped = list(await manager.reap_orphans())
    problems = list(manager.reap_errors)
    for name in plugins.sandbox_providers.names():
        try:
            provider = manager.provider(name)
            for sandbox_id in await provider.reap():
                if sandbox_id not in reaped:
                    reaped.append(sandbox_id)
        except Exception as e:  # noqa: BLE001 - one broken provider must not stop the others
            problems.append(f"provider {name!r}: {e}")
    return reaped, problems


@click.group()
def sandbox() -> None:
    """Clean up sandboxes."""


@sandbox.command()
def prune() -> None:
    """Tear down sandboxes whose owning agent-env process died (every provider)."""
    import anyio

    from agent_env.config import load_config
    from agent_env.paths import home
    from agent_env.plugins import get_plugin_manager

    plugins = get_plugin_manager()
    config = load_config(plugins=plugins)
    reaped, problems = anyio.run(prune_all, plugins, config, home())
    for sandbox_id in reaped:
        click.echo(f"removed {sandbox_id}")
    click.echo(f"pruned {len(reaped)} sandbox(es)")
    for problem in problems:
        click.echo(f"warning: {problem}", err=True)
    if problems:
        raise SystemExit(1)
