"""Reading results back, for front ends (the explorer, notebooks, dashboards): pages of run and
trial records, a run's counts and statistics computed by the store (grouped counts, so a run
of 100,000 trials costs a few indexed queries), one trial with its trajectories and kept logs,
and which runs used an entity's version. The public API over the kernel's record formats.

Example::

    stores = await open_configured_stores()
    page = await run_page(stores.documents, limit=20)
    for run_id, run in page.items:
        print(run_id, await run_counts(stores.documents, run))
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_env.engine.outcome import EXCLUDED_CLASSES
from agent_env.stores.base import DocumentStore, ObjectStore, Page

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.engine.records import TaskInstanceRecord

#: The collections of run documents and of task instance (trial) records.
RUNS = "runs"
TRIALS = "task_instances"
#: The statuses a trial record can have (`trial_page(status=...)`).
STATUSES = ("pending", "running", "passed", "scored_below", "unscored", "failed", "cancelled")
#: The kinds of versioned entities bundles store (`Stores.entities`).
ENTITY_KINDS = ("task", "env", "artifact", "agent", "skill", "eval")
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


async def open_configured_stores(cwd: Path | None = None) -> Any:
    """The stores `.agentenv/config.toml` (found from `cwd` up) selects; close them after."""
    from agent_env.config import load_config
    from agent_env.plugins import get_plugin_manager
    from agent_env.stores.open import open_stores_async

    plugins = get_plugin_manager()
    return await open_stores_async(load_config(cwd, plugins=plugins), plugins)


def config_path(cwd: Path | None = None) -> Path | None:
    """The `.agentenv/config.toml` a command run in `cwd` uses (`$AGENT_ENV_CONFIG` first);
    None when there is none."""
    from agent_env.config import find_config_file

    return find_config_file(cwd)


async def config_table(section: str, stores: Any, cwd: Path | None = None) -> dict[str, Any]:
    """A plugin's config section (declared in its `CONFIG_SECTIONS`) with defaults merged and
    `env:` / `secret:` references resolved (secrets from `stores.secrets`)."""
    from agent_env.config import load_config
    from agent_env.config.refs import resolve_value
    from agent_env.plugins import get_plugin_manager

    table = load_config(cwd, plugins=get_plugin_manager()).table(section)
    resolved: dict[str, Any] = await resolve_value(table, stores.secrets, where=f"[{section}]")
    return resolved


async def run_page(
    documents: DocumentStore, *, limit: int = 50, offset: int = 0, bundle: str | None = None
) -> Page:
    """Runs, newest first; `bundle` keeps the runs of the bundle of that name."""
    where = {"bundle.name": bundle} if bundle else {}
    return await documents.query(
        RUNS, where=where, order_by="created_at", descending=True, limit=limit, offset=offset
    )


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
    return await documents.count_by(TRIALS, _GROUP_FIELDS, where={"run_id": run_id})


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
    from agent_env.engine.records import TaskInstanceRecord, TaskRef
    from agent_env.reporting.results import Results, shown_ks

    tasks = list(dict.fromkeys(run.get("tasks") or []))
    results = Results(tasks, run.get("eval_tasks") or {}, ks=shown_ks)
    bins = [0] * 10
    if groups is None:
        groups = await run_groups(documents, run["id"])
    for (task, status, cls, _attempt, scores), count in _final_groups(groups):
        record = TaskInstanceRecord(
            id="group",
            run_id=run["id"],
            task=TaskRef(name=str(task)),
            status=str(status or "pending"),
            failure_class=cls,
            scores=json.loads(scores) if isinstance(scores, str) else {},
        )
        results.add(record, count)
        score = record.score()
        if score is not None and cls not in EXCLUDED_CLASSES:
            bins[min(int(max(score, 0.0) * 10), 9)] += count
    summary = results.summary()
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
    from agent_env.reporting.stats import wilson_interval

    scored: dict[str, list[float]] = {}  # verifier -> [trials, passed, sum of scores]
    for (_task, status, cls, _attempt, scores), count in _final_groups(groups):
        if status == "cancelled" or cls in EXCLUDED_CLASSES:
            continue
        for vid, score in (json.loads(scores) if isinstance(scores, str) else {}).items():
            if isinstance(score, (int, float)) and not isinstance(score, bool):
                tally = scored.setdefault(str(vid), [0, 0, 0.0])
                tally[0] += count
                tally[1] += count if score >= 1 else 0
                tally[2] += score * count
    rows = []
    for vid, (trials, passed, total) in scored.items():
        interval = wilson_interval(int(passed), int(trials))
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


async def trial_page(
    documents: DocumentStore,
    run_id: str,
    *,
    status: str | None = None,
    task: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> Page:
    """A run's trial records (every attempt) in plan order, filtered by status or task name."""
    where: dict[str, Any] = {"run_id": run_id}
    if status:
        where["status"] = status
    if task:
        where["task.name"] = task
    return await documents.query(TRIALS, where=where, limit=limit, offset=offset)


async def live_steps(documents: DocumentStore, record: Mapping[str, Any]) -> dict[str, Any]:
    """A trial's steps (`{step id: {status, ...}}`) as they stand: the record's, and for a
    trial still running also the steps its journal says completed since (the record is
    rewritten only at the trial's start and end)."""
    from agent_env.engine.journal import COLLECTION

    steps = {sid: dict(info) for sid, info in (record.get("steps") or {}).items()}
    if record.get("status") != "running":
        return steps
    for _, entry in await documents.list(COLLECTION, f"{record.get('id')}/"):
        info = steps.get(entry.get("step_id"))
        if info is not None and entry.get("status"):
            info.update(status=entry["status"], seconds=entry.get("seconds"))
    return steps


async def trial_details(objects: ObjectStore, record: Mapping[str, Any]) -> dict[str, Any]:
    """What a trial kept besides its record: `trajectories` (each prompt's events and the
    gateway's calls, by prompt id; `{"missing": why}` for one the store cannot give) and `logs`
    (its servers' and agents' output, by sandbox; `{"(unavailable)": why}` when the object
    store cannot list them)."""
    from agent_env.engine import trial_logs
    from agent_env.reporting.export import stored_trajectories

    trajectories = await stored_trajectories(objects, record)
    try:
        logs = await trial_logs.load(objects, str(record.get("id") or ""))
    except Exception as exc:  # an unreadable object store still shows the record
        logs = {"(unavailable)": str(exc)}
    return {"trajectories": trajectories, "logs": logs}


async def runs_using(
    stores: Any, kind: str, entity_id: str, version: int | None = None
) -> list[str] | None:
    """The ids of the runs that used `entity_id` (at `version`), newest first: what the runs
    recorded (`agent_env.stores.lineage`), and for tasks also what the trial records name
    (runs from before lineage was recorded)."""
    from agent_env.stores import lineage

    found = set(await lineage.runs_using(stores, kind, entity_id, version))
    if kind == "task":
        where: dict[str, Any] = {"task.id": entity_id}
        if version is not None:
            where["task.version"] = version
        groups = await stores.documents.count_by(TRIALS, ["run_id"], where=where)
        found.update(str(k[0]) for k, _ in groups)
    return sorted(found, reverse=True)


def counted(record: TaskInstanceRecord) -> bool:
    """Whether a trial record counts in a run's statistics (`run_results`, `agent-env run`'s
    table): finished or cancelled, and not left out for its failure class (cancelled,
    infrastructure, verifier error)."""
    from agent_env.reporting.results import EXCLUDED, FINAL

    return record.status in FINAL and record.effective_failure_class() not in EXCLUDED


def decide_outcome(
    steps: Any, verifiers: Mapping[str, Any], *, failure: Mapping[str, Any] | None = None
) -> tuple[str, str, dict[str, float], str | None]:
    """(status, outcome, counted scores, failure class) of a trial whose verifier results are
    `verifiers` under the engine's outcome rule (`steps`: the task's steps, whose aggregating
    verifiers decide when they scored), for a front end that re-scores stored trials."""
    from agent_env.engine.outcome import decide, failure_class

    status, outcome, scores = decide(
        steps, {"verifiers": verifiers}, failure=failure, cancelled=False
    )
    return status, outcome, scores, failure_class(status, failure)


def wilson_interval(passes: int, n: int) -> tuple[float, float] | None:
    """The Wilson score 95% interval of a pass rate (the one the results table shows); None
    for no trials."""
    from agent_env.reporting.stats import wilson_interval as interval

    return interval(passes, n)
