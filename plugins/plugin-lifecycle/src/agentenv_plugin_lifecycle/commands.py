"""`agent-env plugin add|remove`: install and remove plugins with the installer that owns this
environment, checking that every plugin still loads (logic in the sibling modules).

Exit codes: 0 done (or a dry run); 1 refused, failed (rolled back) or aborted; 2 usage error."""

from __future__ import annotations

from typing import Any

import click


def _err(message: str) -> None:
    click.echo(message, err=True)


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


@click.command("add")
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
    from agentenv_plugin_lifecycle.add import execute_add, plan_add

    plan = plan_add(list(specs), find_links=find_links, no_index=no_index)
    result = execute_add(plan, confirm=_asker(dry_run, yes), echo=_err, lock_timeout=lock_timeout)
    if result is None:
        return
    for kind, items in result.changes.items():
        for item in items:
            click.echo(f"{kind}: {item}")
    click.echo(f"ok: added plugin(s) {', '.join(result.plugins) or '-'}; every plugin loads")


@click.command("remove")
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
    from agentenv_plugin_lifecycle.remove import execute_remove, plan_remove

    plan = plan_remove(list(names))
    if dry_run:
        for user in plan.users:
            click.echo(f"in use: {user}")
    result = execute_remove(
        plan,
        force=force or dry_run,
        confirm=_asker(dry_run, yes),
        echo=_err,
        lock_timeout=lock_timeout,
    )
    if result is None:
        return
    for kind, items in result.items():
        for item in items:
            click.echo(f"{kind}: {item}")
    click.echo(f"ok: removed {', '.join(plan.dists)}; every other plugin loads")
