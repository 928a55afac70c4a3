"""`agent-env config show`: the file in effect and where every value came from, secrets masked."""

from __future__ import annotations

import json

import click

from agent_env.config import CONFIG_RELPATH, load_config


@click.group()
def config() -> None:
    """Inspect the configuration."""


@config.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show(as_json: bool) -> None:
    """Print the config file in effect and each setting with its origin (secrets masked)."""
    cfg = load_config()
    rows = cfg.rows()
    if as_json:
        payload = {
            "file": str(cfg.path) if cfg.path else None,
            "home": str(cfg.home),
            "settings": rows,
        }
        click.echo(json.dumps(payload, indent=2))
        return
    if cfg.path:
        click.echo(f"# config file: {cfg.path}")
    else:
        click.echo(f"# config file: none found (no {CONFIG_RELPATH} here or above); defaults")
    click.echo(f"# home: {cfg.home}")
    section = None
    for row in rows:
        if row["section"] != section:
            section = row["section"]
            click.echo(f"\n[{section}]")
        value = json.dumps(row["value"])
        click.echo(f"{row['key']} = {value}".ljust(40) + f"  # {row['origin']}")
