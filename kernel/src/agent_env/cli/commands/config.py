"""`agent-env config show|explain|sources|debug`: the file in effect, where every value came
from and how it was overridden, secrets masked."""

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


def _split(path: str) -> tuple[str, str]:
    section, dot, key = path.rpartition(".")
    if not dot or not section or not key:
        raise click.BadParameter(
            f"{path!r}: use SECTION.KEY, e.g. run.concurrency", param_hint="PATH"
        )
    return section, key


@config.command("explain")
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def explain(path: str, as_json: bool) -> None:
    """Show how setting PATH (SECTION.KEY, e.g. run.concurrency) got its value: the default,
    then each source that set it, in precedence order; the last one is in effect."""
    section, key = _split(path)
    rows = load_config().explain(section, key)
    if as_json:
        click.echo(json.dumps({"setting": path, "layers": rows}, indent=2))
        return
    for row in rows:
        mark = "=>" if row["in_effect"] else "  "
        click.echo(f"{mark} {json.dumps(row['value'])}".ljust(40) + f"  # {row['origin']}")


def _sources(cfg) -> list[dict]:
    import os

    from agent_env.config.loader import find_config_file

    env = sorted(k for k in os.environ if k.startswith("AGENT_ENV_"))
    fallbacks = [k for k in ("LITELLM_BASE_URL", "LITELLM_API_KEY") if os.environ.get(k)]
    named = os.environ.get("AGENT_ENV_CONFIG")
    return [
        {"order": 1, "source": "defaults", "detail": "built-in and plugin-declared defaults"},
        {
            "order": 2,
            "source": "file",
            "detail": str(find_config_file()) if cfg.path else None,
            "how": "AGENT_ENV_CONFIG" if named else f"{CONFIG_RELPATH} here or in a parent",
        },
        {"order": 3, "source": "environment", "detail": env},
        {"order": 4, "source": "configure()", "detail": "settings made in code"},
        {"order": 5, "source": "fallbacks", "detail": fallbacks},
    ]


@config.command("sources")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def sources(as_json: bool) -> None:
    """List where settings come from, lowest precedence first: defaults, the config file,
    AGENT_ENV_* variables, configure(), and LITELLM_* fallbacks for [model]."""
    rows = _sources(load_config())
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        detail = row["detail"]
        if isinstance(detail, list):
            detail = ", ".join(detail) or "none set"
        click.echo(f"{row['order']}. {row['source']}: {detail or 'none found'}")


@config.command("debug")
def debug() -> None:
    """Print everything about the configuration as JSON: sources, every setting with each
    layer that set it, the home folder and the warnings (secrets masked)."""
    cfg = load_config()
    settings = {
        f"{r['section']}.{r['key']}": cfg.explain(r["section"], r["key"]) for r in cfg.rows()
    }
    payload = {
        "file": str(cfg.path) if cfg.path else None,
        "home": str(cfg.home),
        "sources": _sources(cfg),
        "settings": settings,
        "warnings": cfg.warnings,
    }
    click.echo(json.dumps(payload, indent=2, default=str))
