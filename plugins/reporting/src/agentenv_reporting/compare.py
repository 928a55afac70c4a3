"""Two runs side by side (`agent-env runs compare A B`): per task each run's pass rate with its
Wilson interval and the change from A to B with Newcombe's interval, each verifier's pass rate
in both, and the trials that flipped (the same task and trial number passed in one run and not
in the other; trials excluded from the statistics, cancelled or infrastructure failures, and
trials that never finished are not compared). The figures are those `runs show` and the
explorer report (`agentenv_reporting.grouped`), so the three agree.

Example::

    async with await open_configured_stores() as stores:
        a, b = [await stores.documents.get(RUNS, run_id) for run_id in (run_a, run_b)]
        print((await compare_runs(stores.documents, a, b))["change"])
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from agent_env import results
from agentenv_reporting import grouped


def difference_interval(
    passes_a: int, n_a: int, passes_b: int, n_b: int
) -> tuple[float, float] | None:
    """A 95% interval for the change in pass rate from A to B (`p_b - p_a`): Newcombe's hybrid
    score interval, built from the two Wilson intervals; None when either side has no trials."""
    a, b = results.wilson_interval(passes_a, n_a), results.wilson_interval(passes_b, n_b)
    if a is None or b is None:
        return None
    p_a, p_b = passes_a / n_a, passes_b / n_b
    delta = p_b - p_a
    low = delta - math.sqrt((p_b - b[0]) ** 2 + (a[1] - p_a) ** 2)
    high = delta + math.sqrt((b[1] - p_b) ** 2 + (p_a - a[0]) ** 2)
    return max(-1.0, low), min(1.0, high)


def _rate(stats: dict[str, Any] | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    return {k: stats[k] for k in ("trials", "passed", "pass_rate", "pass_rate_ci95")}


def _change(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any]:
    """`delta` (B's pass rate minus A's) and `delta_ci95`; None where a side has no trials."""
    if not a or not b or not a["trials"] or not b["trials"]:
        return {"delta": None, "delta_ci95": None}
    interval = difference_interval(a["passed"], a["trials"], b["passed"], b["trials"])
    return {
        "delta": round(b["passed"] / b["trials"] - a["passed"] / a["trials"], 6),
        "delta_ci95": [round(x, 6) for x in interval] if interval else None,
    }


def _side_by_side(
    a_rows: list[dict[str, Any]], b_rows: list[dict[str, Any]], key: str
) -> list[dict[str, Any]]:
    """Rows of both runs matched on `key`, in A's order then B's new ones."""
    a_by, b_by = {r[key]: r for r in a_rows}, {r[key]: r for r in b_rows}
    rows = []
    for name in dict.fromkeys([*a_by, *b_by]):
        a, b = _rate(a_by.get(name)), _rate(b_by.get(name))
        rows.append({key: name, "a": a, "b": b, **_change(a, b)})
    return rows


async def _outcomes(documents: Any, run: dict[str, Any]) -> dict[tuple[str, int], Any]:
    """The counted trials' last attempts by (task, trial number)."""
    from agent_env.cli.toolkit import run_records

    out = {}
    async for record in run_records(documents, run):
        if results.counted(record):
            out[(record.task.name, record.trial)] = record
    return out


def _trial(record: Any) -> dict[str, Any]:
    return {"id": record.id, "status": str(record.status), "outcome": record.outcome}


def _run_row(run: dict[str, Any], tasks: list[dict[str, Any]]) -> dict[str, Any]:
    meta = run.get("meta") or {}
    trials, passed = sum(t["trials"] for t in tasks), sum(t["passed"] for t in tasks)
    return {
        "id": run["id"],
        "created_at": run.get("created_at"),
        "bundle": (run.get("bundle") or {}).get("name"),
        "front_end": run.get("front_end"),
        "runner": run.get("runner"),
        "agent": meta.get("agent"),
        "model": meta.get("model"),
        "trials": trials,
        "passed": passed,
        "pass_rate": round(passed / trials, 6) if trials else None,
    }


async def compare_runs(
    documents: Any, a: Mapping[str, Any], b: Mapping[str, Any]
) -> dict[str, Any]:
    """Stored run documents `a` and `b` side by side, as `agent-env runs compare` shows them:
    `{a, b, change, tasks, verifiers, flipped: {fixed, broken}}`, per task and verifier both
    pass rates and the change with its interval (`grouped.run_results` of each), and
    the trials that flipped (`fixed`: failed in A, passed in B; `broken`: the reverse)."""
    a, b = dict(a), dict(b)
    stats = [await grouped.run_results(documents, run) for run in (a, b)]
    runs = [_run_row(run, s["tasks"]) for run, s in zip((a, b), stats, strict=True)]
    before, after = await _outcomes(documents, a), await _outcomes(documents, b)
    flipped: dict[str, list[dict[str, Any]]] = {"fixed": [], "broken": []}
    for key, old in before.items():
        new = after.get(key)
        if new is None or (old.status == "passed") == (new.status == "passed"):
            continue
        kind = "fixed" if new.status == "passed" else "broken"
        flipped[kind].append({"task": key[0], "trial": key[1], "a": _trial(old), "b": _trial(new)})
    return {
        "a": runs[0],
        "b": runs[1],
        "change": _change(*runs),
        "tasks": _side_by_side(stats[0]["tasks"], stats[1]["tasks"], "name"),
        "verifiers": _side_by_side(stats[0]["verifiers"], stats[1]["verifiers"], "verifier"),
        "flipped": flipped,
        "intervals": {
            "pass_rate": "Wilson score interval, 95%",
            "delta": "Newcombe hybrid score interval (from the two Wilson intervals), 95%",
        },
    }
