"""Reading results back, for front ends (the explorer, notebooks, dashboards): pages of run and
trial records, one trial with its trajectories and kept logs, and which runs used an entity's
version. The public API over the kernel's record formats. A run's counts and statistics
computed by the store (`run_groups`, `run_counts`, `run_results`, `verifier_rates`) come with
agentenv-reporting (`agentenv_reporting.grouped`) and resolve here on first use.

Example::

    async with await open_configured_stores() as stores:
        page = await run_page(stores.documents, limit=20)
        for run_id, run in page.items:
            print(run_id, await run_counts(stores.documents, run))
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


async def open_configured_stores(cwd: Path | None = None) -> Any:
    """The stores `.agentenv/config.toml` (found from `cwd` up) selects; close them after
    (`async with await open_configured_stores() as stores:` does)."""
    from agent_env.config import load_config
    from agent_env.plugins import get_plugin_manager
    from agent_env.stores.open import open_stores_async

    plugins = get_plugin_manager()
    return await open_stores_async(load_config(cwd, plugins=plugins), plugins)


async def with_configured_stores(fn: Any, *args: Any) -> Any:
    """`await fn(stores, *args)` with the configured stores, closed after: for a synchronous
    command, `anyio.run(with_configured_stores, fn, ...)`."""
    async with await open_configured_stores() as stores:
        return await fn(stores, *args)


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


#: Names that moved to agentenv-reporting's `agentenv_reporting.grouped`, resolved on first use.
_GROUPED = frozenset(
    {"run_groups", "run_counts", "run_results", "verifier_rates", "COUNTED", "Groups"}
)
_REPORTING = "agentenv-reporting"


def __getattr__(name: str) -> Any:
    """The grouped counts (`run_counts`, ...), from agentenv-reporting; without it, an error
    that says what to install."""
    if name not in _GROUPED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    try:
        grouped = import_module("agentenv_reporting.grouped")
    except ModuleNotFoundError as exc:
        if exc.name not in ("agentenv_reporting", "agentenv_reporting.grouped"):
            raise
        from agent_env.plugins.known import install_command

        raise AttributeError(
            f"agent_env.results.{name} comes with {_REPORTING} (agentenv_reporting.grouped); "
            f"install it with: {install_command(_REPORTING)}"
        ) from None
    value = getattr(grouped, name)
    globals()[name] = value
    return value
