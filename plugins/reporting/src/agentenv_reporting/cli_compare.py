"""`agent-env runs compare A B [--json]`: two recorded runs side by side (the figures come
from `agentenv_reporting.compare`; this module reads the runs and prints them)."""

from __future__ import annotations

from typing import Any

import anyio
import click

from agent_env.cli.toolkit import table

#: How many flipped trials of each kind the text shows (`--json` has them all).
SHOWN_FLIPS = 20


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{100 * rate:.1f}%"


def _side(rate: dict[str, Any] | None) -> str:
    if rate is None:
        return "(not in run)"
    ci = rate["pass_rate_ci95"]
    interval = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
    return f"{rate['passed']}/{rate['trials']} {_pct(rate['pass_rate'])}{interval}"


def _delta(row: dict[str, Any]) -> str:
    if row["delta"] is None:
        return "-"
    ci = row["delta_ci95"]
    interval = f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]" if ci else ""
    return f"{100 * row['delta']:+.1f} pts{interval}"


def _who(run: dict[str, Any]) -> str:
    parts = [f"bundle {run['bundle']}"]
    if run["front_end"] or run["runner"]:
        parts.append(
            " · ".join(
                filter(None, [run["front_end"], run["runner"] and f"{run['runner']} runner"])
            )
        )
    parts += [f"{k} {run[k]}" for k in ("agent", "model") if run[k]]
    return ", ".join(parts)


def format_comparison(data: dict[str, Any]) -> list[str]:
    """`compare_runs`'s answer as the lines `agent-env runs compare` prints."""
    a, b = data["a"], data["b"]
    lines = [
        f"A {a['id']}  {a['created_at']}  {_who(a)}",
        f"B {b['id']}  {b['created_at']}  {_who(b)}",
        f"pass rate: A {a['passed']}/{a['trials']} {_pct(a['pass_rate'])}, "
        f"B {b['passed']}/{b['trials']} {_pct(b['pass_rate'])}, change {_delta(data['change'])}",
    ]
    for title, key, rows in (
        ("task", "name", data["tasks"]),
        ("verifier", "verifier", data["verifiers"]),
    ):
        if rows:
            head = [title, "A passed (95% CI)", "B passed (95% CI)", "change (95% CI)"]
            body = [[r[key], _side(r["a"]), _side(r["b"]), _delta(r)] for r in rows]
            lines += ["", *table([head, *body]).splitlines()]
    fixed, broken = data["flipped"]["fixed"], data["flipped"]["broken"]
    lines += [
        "",
        f"flipped: {len(fixed)} fixed (not passed in A, passed in B), {len(broken)} broken",
    ]
    for kind, rows in (("fixed", fixed), ("broken", broken)):
        for row in rows[:SHOWN_FLIPS]:
            lines.append(
                f"  {kind}  {row['task']} #{row['trial']}  {row['a']['status']} -> "
                f"{row['b']['status']}  {row['a']['id']} -> {row['b']['id']}"
            )
        if len(rows) > SHOWN_FLIPS:
            lines.append(f"  ... and {len(rows) - SHOWN_FLIPS} more {kind} (--json lists them)")
    return lines


async def _stored_run(documents: Any, run_id: str, command: str) -> dict[str, Any]:
    """The stored run document `run_id`; the did-you-mean error for an unknown id."""
    from agent_env.cli.toolkit import load_record
    from agent_env.results import RUNS

    run = await documents.get(RUNS, run_id)
    if run is None:
        await load_record(documents, run_id)  # the did-you-mean error
        raise click.UsageError(f"{run_id!r} is a task instance; {command} takes run ids (run-...)")
    return dict(run)


async def _compare(a_id: str, b_id: str) -> dict[str, Any]:
    from agent_env.results import open_configured_stores
    from agentenv_reporting.compare import compare_runs

    async with await open_configured_stores() as stores:
        a = await _stored_run(stores.documents, a_id, "compare")
        b = await _stored_run(stores.documents, b_id, "compare")
        return await compare_runs(stores.documents, a, b)


@click.command("compare")
@click.argument("run_a", metavar="RUN_A")
@click.argument("run_b", metavar="RUN_B")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def compare(run_a: str, run_b: str, as_json: bool) -> None:
    """RUN_B against RUN_A: per task both pass rates (Wilson 95% intervals) and the change
    (Newcombe 95% interval), each verifier's pass rates, and the trials that flipped (the same
    task and trial number passed in one run and not the other)."""
    from agent_env.cli.toolkit import echo, emit_json

    data = anyio.run(_compare, run_a, run_b)
    if as_json:
        emit_json(data)
        return
    for line in format_comparison(data):
        echo(line)
