"""`agent-env check SPEC`: validate a bundle (folder, installed name, hf://...) without running
it, through the same load and materialize path as `agent-env run` (nothing is written).

Exit codes: 0 valid; 2 problems (every one listed, each naming its file, step and field).
"""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import click

EXIT_OK, EXIT_PROBLEMS = 0, 2

#: A problem line's leading file (`tasks/t.json: ...`), when it names one.
_FILE = re.compile(r"^(?P<file>[^\s:]+\.(?:json|toml|md|yaml|yml|txt|py)|[^\s:]+/): (?P<rest>.*)$")


_STEP = re.compile(r"^step '(?P<step>[^']+)': (?P<rest>.*)$")
_FIELD = re.compile(
    r"^(?P<field>[A-Za-z_][\w\[\].]*): |^unknown (?:field|key) '(?P<unknown>[^']+)'"
)


def split_problem(line: str) -> dict[str, Any]:
    """`{"file", "step", "field", "message"}` of one problem line (None for what it does not
    name), as the bundle parser words them: `<file>: step '<id>': <field>: <message>`."""
    out: dict[str, Any] = {"file": None, "step": None, "field": None, "message": line}
    rest = line
    if (match := _FILE.match(rest)) is not None:
        out["file"], rest = match["file"], match["rest"]
    if (match := _STEP.match(rest)) is not None:
        out["step"], rest = match["step"], match["rest"]
    if (match := _FIELD.match(rest)) is not None:
        out["field"] = match["field"] or match["unknown"]
    out["message"] = rest
    return out


async def _check(session: Any, spec: str) -> dict[str, Any]:
    from agent_env.runs import service

    bundle, materialized = await service.load_bundle(session, spec, dry_run=True)
    return {
        "spec": spec,
        "ok": True,
        "bundle": bundle.name,
        "root": str(bundle.root),
        "tasks": sorted(bundle.tasks),
        "evals": sorted(bundle.evals),
        "envs": sorted(bundle.envs),
        "agents": sorted(bundle.agents),
        "artifacts": sorted({**bundle.skills, **bundle.artifacts}),
        "warnings": list(bundle.warnings),
        "writes": list(materialized.lines),
        "problems": [],
    }


@click.command("check")
@click.argument("spec")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def check(spec: str, as_json: bool) -> int:
    """Validate the bundle SPEC without running it: every problem at once (file, step, field,
    with a did-you-mean), exit 2 when there is any. Nothing is written to the stores.

    Exit codes: 0 valid, 2 problems."""
    from agent_env.cli.session import with_session
    from agent_env.errors import BundleError

    try:
        result = anyio.run(with_session, _check, spec)
    except BundleError as exc:
        lines = exc.problems or [str(exc)]
        headline = str(exc).splitlines()[0]
        result = {
            "spec": spec,
            "ok": False,
            "error": headline,
            "problems": [split_problem(p) for p in lines],
        }
    if as_json:
        click.echo(json.dumps(result, indent=2))
    elif result["ok"]:
        counts = ", ".join(
            f"{len(result[k])} {k}" for k in ("tasks", "evals", "envs", "agents", "artifacts")
        )
        # its warnings were printed as the bundle loaded (`agent-env: warning: ...`, once)
        click.echo(f"ok: bundle {result['bundle']!r} ({counts})")
    else:
        click.echo(f"{result['error']}", err=True)
        if len(result["problems"]) > 1 or result["problems"][0]["message"] != result["error"]:
            for p in result["problems"]:
                where = "".join(
                    f"{part}: " for part in (p["file"], p["step"] and f"step {p['step']!r}") if part
                )
                click.echo(f"  - {where}{p['message']}", err=True)
    return EXIT_OK if result["ok"] else EXIT_PROBLEMS
