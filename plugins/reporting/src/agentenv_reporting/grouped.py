"""A run's trial records counted by the store, grouped by task, status, failure class, attempt
and scores: a run of 100,000 trials costs a few indexed queries. What the explorer's run pages
and `runs compare` show (`agent_env.results` re-exports these names).

Example::

    async with await open_configured_stores() as stores:
        groups = await run_groups(stores.documents, run["id"])
        print(await run_counts(stores.documents, run, groups=groups))
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agent_env import results
from agent_env.cli import toolkit
from agent_env.stores.base import DocumentStore

#: The counted outcomes of a run (`run_counts`), in display order.
COUNTED = ("passed", "failed", "unscored", "cancelled", "running", "unfinished")
_COUNT_OF = {
    "passed": "passed",
    "scored_below": "failed",
    "failed": "failed",
    "unscored": "unscored",
    "cancelled": "cancelled",
    "running": "running",
    "pending": "unfinished",
}
_GROUP_FIELDS = ["task.name", "status", "failure_class", "attempt", "scores"]
#: Grouped counts: `[((task, status, failure class, attempt, scores JSON), count), ...]`.
Groups = list[tuple[tuple[Any, ...], int]]


def _retries(groups: Groups) -> dict[str, int]:
    """Per task, how many records are retries (each supersedes an infrastructure failure)."""
    out: dict[str, int] = {}
    for (task, _status, _cls, attempt, _scores), count in groups:
        if isinstance(attempt, int) and attempt > 0:
            out[task] = out.get(task, 0) + count
    return out


def _final_groups(groups: Groups) -> Groups:
    """The groups with the superseded attempts (infrastructure failures that were retried) taken
    out, so each trial counts once, as its last attempt."""
    retries = _retries(groups)
    out = []
    for key, count in groups:
        task, status, cls, _attempt, _scores = key
        if status == "failed" and cls == "infrastructure" and retries.get(task):
            dropped = min(count, retries[task])
            retries[task] -= dropped
            count -= dropped
        if count:
            out.append((key, count))
    return out


async def run_groups(documents: DocumentStore, run_id: str) -> Groups:
    """A run's trial records counted by task, status, failure class, attempt and scores: what
    `run_counts` and `run_results` are computed from (pass it to both to query once)."""
    return await documents.count_by(results.TRIALS, _GROUP_FIELDS, where={"run_id": run_id})


async def run_counts(
    documents: DocumentStore, run: Mapping[str, Any], *, groups: Groups | None = None
) -> dict[str, Any]:
    """`{trials, passed, failed, unscored, cancelled, running, unfinished, pass_rate}` of a
    stored run document; `failed` includes scored below 1, `unfinished` the never started."""
    if groups is None:
        groups = await run_groups(documents, run["id"])
    groups = _final_groups(groups)
    counts = dict.fromkeys(COUNTED, 0)
    started = 0
    for (_task, status, _cls, _attempt, _scores), count in groups:
        counts[_COUNT_OF.get(status, "unfinished")] += count
        started += count
    planned = len(run.get("instances") or [])
    counts["unfinished"] += max(planned - started, 0)
    decided = counts["passed"] + counts["failed"]
    return {
        "trials": planned,
        **counts,
        "pass_rate": round(counts["passed"] / decided, 6) if decided else None,
    }


async def run_results(
    documents: DocumentStore, run: Mapping[str, Any], *, groups: Groups | None = None
) -> dict[str, Any]:
    """A run's statistics as `agent-env run` reports them (per task and eval: pass rate with
    its Wilson interval, mean score with its t interval, pass@k for k = 1, 2, 4, ... and every
    trial, failure classes) plus `score_histogram`: trials per score bin (ten bins of 0.1, the
    last one closed), and `verifiers`: each verifier's pass rate (`verifier_rates`)."""
    tasks = list(dict.fromkeys(run.get("tasks") or []))
    table = toolkit.Results(tasks, run.get("eval_tasks") or {}, ks=toolkit.shown_ks)
    bins = [0] * 10
    if groups is None:
        groups = await run_groups(documents, run["id"])
    for (task, status, cls, _attempt, scores), count in _final_groups(groups):
        record = toolkit.TaskInstanceRecord(
            id="group",
            run_id=run["id"],
            task=toolkit.TaskRef(name=str(task)),
            status=str(status or "pending"),
            failure_class=cls,
            scores=json.loads(scores) if isinstance(scores, str) else {},
        )
        table.add(record, count)
        score = record.score()
        if score is not None and cls not in toolkit.EXCLUDED:
            bins[min(int(max(score, 0.0) * 10), 9)] += count
    summary = table.summary()
    for stats in summary["tasks"]:
        stats.pop("seconds_mean", None)  # grouped counts carry no durations
    summary["score_histogram"] = [
        {"from": i / 10, "to": (i + 1) / 10, "trials": n} for i, n in enumerate(bins)
    ]
    summary["verifiers"] = verifier_rates(groups)
    return summary


def verifier_rates(groups: Groups) -> list[dict[str, Any]]:
    """Per verifier, over the trials it scored (cancelled, verifier-error and infrastructure
    failures left out): `{verifier, trials, passed, pass_rate, pass_rate_ci95, mean_score}`, a pass being a
    score of 1 or more; the lowest pass rate first (the verifier that fails most). A run whose
    tasks aggregate their verifiers counts the aggregate ones: the scores that decide outcomes."""
    scored: dict[str, list[float]] = {}  # verifier -> [trials, passed, sum of scores]
    for (_task, status, cls, _attempt, scores), count in _final_groups(groups):
        if status == "cancelled" or cls in toolkit.EXCLUDED:
            continue
        for vid, score in (json.loads(scores) if isinstance(scores, str) else {}).items():
            if isinstance(score, (int, float)) and not isinstance(score, bool):
                tally = scored.setdefault(str(vid), [0, 0, 0.0])
                tally[0] += count
                tally[1] += count if score >= 1 else 0
                tally[2] += score * count
    rows = []
    for vid, (trials, passed, total) in scored.items():
        interval = results.wilson_interval(int(passed), int(trials))
        rows.append(
            {
                "verifier": vid,
                "trials": int(trials),
                "passed": int(passed),
                "pass_rate": round(passed / trials, 6),
                "pass_rate_ci95": [round(x, 6) for x in interval] if interval else None,
                "mean_score": round(total / trials, 6),
            }
        )
    return sorted(rows, key=lambda r: (r["pass_rate"], r["verifier"]))
