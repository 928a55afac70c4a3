"""`agent-env cache list|prune`: the caches plugins register (images, build contexts, wheels,
venvs, Hub downloads, ...), with sizes; prune never removes what a live run uses.

Exit codes: 0 done (`list` also when a kind cannot be listed: it shows why); 1 `prune` could
not remove an entry or list a kind; 2 usage.
"""

from __future__ import annotations

import json
import time
from typing import Any

import click

KIND_HELP = "Only this cache kind (repeatable; see `agent-env cache list`)."


def _kinds(names: tuple[str, ...]) -> list[Any]:
    from agent_env.plugins import get_plugin_manager
    from agentenv_caches.pruning import select

    return select(get_plugin_manager(), names)


@click.group("cache")
def cache() -> None:
    """List and prune agent-env's caches."""


@cache.command("list")
@click.option("--kind", "kinds", metavar="KIND", multiple=True, help=KIND_HELP)
@click.option("--entries/--no-entries", default=True, help="Show each entry (default) or totals.")
@click.option("--json", "as_json", is_flag=True, help="Print the caches as JSON.")
def list_caches(kinds: tuple[str, ...], entries: bool, as_json: bool) -> int:
    """Every cache kind with where it lives, its entries, their sizes and when each was last
    used, and whether a live run uses it. A kind that cannot be listed (Docker down) says why."""
    from agent_env.caches import LiveUse
    from agent_env.config import load_config
    from agent_env.plugins import get_plugin_manager
    from agentenv_caches.pruning import age, human_size

    chosen = _kinds(kinds)
    live = LiveUse.scan(load_config(plugins=get_plugin_manager()).home)
    report = []
    for kind in chosen:
        row: dict[str, Any] = {
            "kind": kind.type,
            "description": kind.description,
            "location": kind.location(),
        }
        try:
            found = kind.entries()
            row["entries"] = [
                {
                    "name": e.name,
                    "size": e.size,
                    "last_used": e.last_used,
                    "in_use": kind.in_use(e, live),
                }
                for e in found
            ]
            row["size"] = sum(e.size for e in found)
        except Exception as e:  # a daemon that is down: the other kinds still list
            row["error"] = f"{type(e).__name__}: {e}"
        report.append(row)
    if as_json:
        total = sum(r.get("size", 0) for r in report)
        click.echo(json.dumps({"kinds": report, "size": total}, indent=2))
        return 0
    now = time.time()
    for row in report:
        if "error" in row:
            click.echo(f"{row['kind']}: cannot list ({row['error']})")
            continue
        click.echo(
            f"{row['kind']}: {len(row['entries'])} entries, {human_size(row['size'])}"
            f"  ({row['location']})"
        )
        if entries:
            for entry in row["entries"]:
                mark = "  in use" if entry["in_use"] else ""
                click.echo(
                    f"  {entry['name']:<60} {human_size(entry['size']):>9}  "
                    f"{age(entry['last_used'], now)}{mark}"
                )
    return 0


@cache.command("prune")
@click.option("--kind", "kinds", metavar="KIND", multiple=True, help=KIND_HELP)
@click.option(
    "--older-than",
    metavar="AGE",
    help="Only entries last used longer ago than AGE (30m, 12h, 7d, 2w); default: all.",
)
@click.option("--dry-run", is_flag=True, help="Show what would be removed; remove nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print what was done as JSON.")
def prune_caches(
    kinds: tuple[str, ...], older_than: str | None, dry_run: bool, as_json: bool
) -> int:
    """Remove cache entries (those last used before AGE with --older-than). An entry a live
    run uses (a sandbox lease whose owner is alive names it, or a container runs an image) is
    kept and reported."""
    from agent_env.caches import LiveUse
    from agent_env.config import load_config
    from agent_env.plugins import get_plugin_manager
    from agentenv_caches.pruning import human_size, parse_age, prune

    try:
        seconds = parse_age(older_than) if older_than is not None else None
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--older-than") from None
    chosen = _kinds(kinds)
    live = LiveUse.scan(load_config(plugins=get_plugin_manager()).home)
    rows = prune(chosen, live, older_than=seconds, dry_run=dry_run)
    freed = sum(r["size"] for r in rows if r["action"] in ("removed", "would remove"))
    failed = [r for r in rows if r["action"] == "failed"]
    if as_json:
        click.echo(json.dumps({"dry_run": dry_run, "entries": rows, "freed": freed}, indent=2))
    else:
        for r in rows:
            why = f" ({r['reason']})" if "reason" in r else ""
            click.echo(f"{r['action']:<12} {r['kind']}: {r['name']} {human_size(r['size'])}{why}")
        verb = "would free" if dry_run else "freed"
        click.echo(f"{verb} {human_size(freed)} in {len(rows) - len(failed)} entries", err=True)
    return 1 if failed else 0
