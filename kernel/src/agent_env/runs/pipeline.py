"""The one run pipeline: a `RunRequest` goes through prepare -> execute -> record here, whoever
asked (`agent-env run`, `task run` / `eval run`, `--resume`, `env deploy`, the explorer, the
OpenEnv server, a Ray worker, `agent_env.testing`).

This module owns what a run is: which tasks of which bundle (`load`), the run document, the
bundle's lineage and the engine services (`plan`), the trials as task instances through the
configured runner (`execute`), and the summary and the exit code (`record`, one rule for every
front end, resumes included). It never prints: a front end passes a `RunObserver` that shows
notices, step progress and the result. Only this module builds `EngineServices` (through the
session), `TrialRun`s and `Trial`s; `tests/test_one_pipeline.py` enforces it.

    pipeline = RunPipeline(await Session.open(), observer)
    try:
        prepared = await pipeline.prepare(RunRequest(spec="hello"))
        result = await pipeline.execute(prepared)   # result.exit_code
    finally:
        await pipeline.session.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_env.aio import shielded, to_thread
from agent_env.costs import budget_of, prices_of
from agent_env.engine.records import RUNS, TaskInstanceRecord
from agent_env.engine.services import EngineServices
from agent_env.errors import BundleError
from agent_env.runs.checks import (
    check_agent,
    check_provider,
    load_bundle,
    load_seeds,
    spec_for_record,
    start_at,
    with_solution,
)
from agent_env.runs.model import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_SIGNAL,
    LoadedBundle,
    PreparedRun,
    Progress,
    RunObserver,
    RunResult,
)
from agent_env.runs.request import RunRequest

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.bundles.model import Bundle, Materialized, Task
    from agent_env.engine.run import Session
    from agent_env.engine.runner import Runner
    from agent_env.engine.tickets import TrialTicket
    from agent_env.engine.trials import Trial
    from agent_env.runs.pool import TaskPools
    from agent_env.runs.selection import Selection


def exit_code(summary: Mapping[str, Any], signals: Sequence[int] = ()) -> int:
    """The one exit-code rule: a signal's code when interrupted; else 1 when a counted trial
    failed or scored below 1, or a trial failed for an infrastructure reason or a verifier's
    error (excluded from the statistics, yet not a pass); else 0 (unscored and cancelled trials
    do not fail a run)."""
    if signals:
        return EXIT_SIGNAL.get(signals[0], 130)
    bad = any(
        any(c != "unscored" for c in task["failures"])
        or task["excluded"].get("infrastructure")
        or task["excluded"].get("verifier_error")
        for task in summary["tasks"]
    )
    return EXIT_FAILED if bad else EXIT_OK


class RunPipeline:
    """prepare -> execute -> record for the requests of one session (plugins, config, stores,
    sandbox manager); `observer` shows what happens."""

    def __init__(self, session: Session, observer: RunObserver | None = None) -> None:
        self.session = session
        self.observer = observer or RunObserver()

    # ---- prepare ---------------------------------------------------------------------------

    async def prepare(self, request: RunRequest) -> PreparedRun:
        """Load (or, with `request.resume`, reload) the bundle, write the run document; the
        run to `execute`. Errors (`BundleError`, `PluginError`, `AgentEnvError` for an unknown
        id, a run still running) come before any trial runs."""
        if request.resume:
            from agent_env.runs.resume import prepare_resume

            return await prepare_resume(self, request)
        if request.from_snapshot:
            from agent_env.runs import fork

            request = await fork.forked(self.session, request)
        loaded = await self.load(request)
        if request.from_snapshot:
            fork.check_task(loaded, request)
        await self.reap_orphans()
        return await self.plan(loaded, request)

    async def load(self, request: RunRequest, *, every_task: bool = False) -> LoadedBundle:
        """The bundle `request` names (`bundle`, `stored` or `spec`) checked, its tasks selected
        (`every_task`: all of them, for a worker) with the run's overrides applied, and
        materialized into the stores (with `request.dry_run`, only what would be written)."""
        from agent_env.runs import overrides, selection

        check_provider(self.session, request.provider)
        chosen: Selection | None = None
        if request.stored is not None:
            bundle, materialized, chosen, spec = await self._stored(request)
            selected = chosen.tasks
        elif request.bundle is not None or request.spec:
            picked: list[tuple[Selection, list[Task]]] = []

            def select(bundle: Bundle) -> None:
                """Every check before anything is written: seeds, the selection, the agent."""
                load_seeds(request, bundle)
                if every_task:
                    picked.append((selection.Selection(tasks=[], evals=[]), []))
                    return
                sel = selection.select(bundle, request.task_names, request.eval_names)
                if not sel.tasks:
                    raise BundleError(f"bundle {bundle.name!r} has no tasks to run")
                picked.append((sel, self._agent_tasks(bundle, sel.tasks, request)))

            bundle, materialized = await load_bundle(
                self.session,
                request.bundle if request.bundle is not None else str(request.spec),
                dry_run=request.dry_run,
                select=select,
            )
            spec = (
                str(bundle.root)
                if request.bundle is not None
                else spec_for_record(str(request.spec))
            )
            chosen, selected = picked[0]
            if every_task:
                selected = list(bundle.tasks.values())
                chosen = None
        else:
            raise BundleError("no bundle spec given")
        for line in materialized.lines:
            self.observer.notice(line)
        tasks, notes = overrides.apply(selected, request)
        if request.start_step:
            tasks, more = start_at(tasks, request.start_step)
            notes += more
        if chosen is not None:
            notes += chosen.not_run_lines(would=request.dry_run)
        for line in notes:
            self.observer.notice(line)
        digest = None
        if not request.dry_run:
            from agent_env.engine.trials import bundle_digest

            digest = await to_thread(bundle_digest, bundle)
        return LoadedBundle(
            bundle=bundle,
            materialized=materialized,
            tasks=tasks,
            evals=list(chosen.evals) if chosen is not None else [],
            spec=spec,
            selection=chosen,
            digest=digest,
        )

    async def _stored(self, request: RunRequest) -> tuple[Bundle, Materialized, Selection, str]:
        """A stored task or eval (or env, for `env deploy`) as a bundle to run."""
        from agent_env.runs import selection

        stored = request.stored
        assert stored is not None
        session = self.session
        if stored.kind in ("env", "agent"):
            from agent_env.entities.deploy import deploy_bundle

            bundle, materialized, _env = await deploy_bundle(
                session.stores,
                session.plugins,
                session.config.home,
                stored.ref,
                stored.version,
                dict(stored.step),
                stored.kind,
            )
            sel = selection.Selection(tasks=list(bundle.tasks.values()), evals=[])
            return bundle, materialized, sel, str(bundle.root)
        from agent_env.entities.runnable import stored_bundle

        bundle, materialized, root = await stored_bundle(
            session.stores,
            session.plugins,
            session.config.home,
            stored.kind,
            stored.ref,
            stored.version,
        )
        names = [root.content.get("name") or root.entity_id.rpartition("/")[2]]
        sel = selection.select(
            bundle, names if stored.kind == "task" else (), names if stored.kind == "eval" else ()
        )
        return bundle, materialized, sel, str(bundle.root)

    def _agent_tasks(self, bundle: Bundle, tasks: list[Task], request: RunRequest) -> list[Task]:
        """`tasks`, or those that ship a solution when `--agent` is a kind that needs one."""
        if not request.agent:
            return tasks
        kind = check_agent(self.session, bundle, request.agent)
        if kind is None or not kind.needs_solution:
            return tasks
        kept, skipped = with_solution(bundle, tasks, request.agent)
        if skipped:
            self.observer.notice(
                f"--agent {request.agent}: skipping {len(skipped)} task(s) without a "
                "solution: " + ", ".join(skipped)
            )
        return kept

    async def reap_orphans(self) -> None:
        """Tear down sandboxes left by agent-env processes that died (before a new run)."""
        reaped = await self.session.sandboxes.reap_orphans()
        if reaped:
            self.observer.notice(
                f"reaped {len(reaped)} sandbox(es) left by agent-env processes that died: "
                + ", ".join(reaped)
            )

    async def services(self, loaded: LoadedBundle | None, request: RunRequest) -> EngineServices:
        """The engine services the instances of `request`'s run share."""
        return await self.session.services(
            artifacts=loaded.materialized.artifacts if loaded is not None else None,
            reporter=self.observer.reporter(request),
            default_provider=request.provider,
            keep=request.keep,
            agent=request.agent,
            model=request.model,
        )

    async def plan(self, loaded: LoadedBundle, request: RunRequest) -> PreparedRun:
        """Write the run document of `request.trials` trials of each of `loaded.tasks` (and
        the bundle's lineage); the run whose `trials` `execute` runs."""
        from agent_env.engine import trials as engine_trials
        from agent_env.engine.records import new_id
        from agent_env.engine.run import bundle_info
        from agent_env.runs.fork import record_meta
        from agent_env.stores.lineage import record_bundle_run

        budget = budget_of(self.session.config, request.budget_usd)  # checked before any write
        prices_of(self.session.config)
        services = await self.services(loaded, request)
        info = bundle_info(loaded.bundle, loaded.spec)
        info["digest"] = loaded.digest
        run_id = new_id("run")
        retry = request.retry_infra
        if retry is None:
            retry = self.session.config.get("run", "retry_infra", 0) or 0
        total = request.trials * len(loaded.tasks)
        trial_run = await engine_trials.plan_run(
            services,
            run_id=run_id,
            bundle=loaded.bundle,
            bundle_info=info,
            tasks=loaded.tasks,
            evals=loaded.evals,
            task_versions=loaded.materialized.task_versions,
            trials=request.trials,
            seeds=load_seeds(request, loaded.bundle),
            retry_infra=int(retry),
            meta={"agent": request.agent, "model": request.model, **record_meta(request)},
            progress=self.observer.progress(request, total, 0) if request.many else None,
            options={
                "concurrency": request.concurrency,
                "sandbox_concurrency": request.sandbox_concurrency,
                "seeds": request.seeds,
                # what a worker in another process applies to its copy of the tasks
                "judge_model": request.judge_model,
                "user_model": request.user_model,
                "budget_usd": budget,
            },
            front_end=request.front_end,
            runner=self.runner_name(request),
            resources=request.resources,
        )
        await record_bundle_run(
            self.session.stores, run_id, loaded.bundle, loaded.materialized, loaded.tasks,
            loaded.evals,
        )  # fmt: skip
        trial_run.budget = budget
        return PreparedRun(request=request, trial_run=trial_run, loaded=loaded)

    # ---- execute ---------------------------------------------------------------------------

    def runner_name(self, request: RunRequest) -> str:
        """The runner type `request` (or `[run] runner`) names."""
        return request.runner or self.session.config.get("run", "runner", "local") or "local"

    def make_runner(self, request: RunRequest, concurrency: int) -> Runner:
        """The runner, built as `cls(concurrency=N, **settings)` with its `[run.<name>]`
        settings and `--address`."""
        config = self.session.config
        name = self.runner_name(request)
        runner_cls = self.session.plugins.runners.get(name)
        settings = dict(config.values.get(f"run.{name}", {}))
        if request.runner_address:
            settings["address"] = request.runner_address
        runner: Runner = runner_cls(concurrency=concurrency, **settings)
        return runner

    async def execute(self, prepared: PreparedRun, *, signals: Sequence[int] = ()) -> RunResult:
        """Run the prepared trials with the configured runner, then `record` the run; when
        cancelled, the record (and `observer.finished`) still happen, shielded. `signals` is
        the list a signal guard fills (read when the run ends)."""
        request, config = prepared.request, self.session.config
        concurrency = request.concurrency or config.get("run", "concurrency", 8) or 8
        limit = request.sandbox_concurrency or config.get("run", "sandbox_concurrency", 8)
        self.session.sandboxes.create_limit = int(limit) if limit else None
        trials = prepared.trials
        try:
            if trials:
                runner = self.make_runner(request, int(concurrency))
                async with self._pools(prepared):
                    await run_with_progress(runner, trials, prepared.trial_run.progress)
            if prepared.reap_used:
                reaped = await self.session.sandboxes.reap_used()
                if reaped:
                    self.observer.notice(
                        f"reaped {len(reaped)} sandbox(es) the interrupted run left and no "
                        "trial adopted"
                    )
        except asyncio.CancelledError:
            await shielded(self.record(prepared, signals=signals))
            raise
        return await self.record(prepared, signals=signals)

    @contextlib.asynccontextmanager
    async def _pools(self, prepared: PreparedRun) -> AsyncIterator[None]:
        """With `--pool N` (or `[run] pool`) and the local runner: the run's trials start with
        warm pools (`agent_env.runs.pool`), filled ahead and torn down when the run ends."""
        request, config = prepared.request, self.session.config
        size = request.pool if request.pool is not None else config.get("run", "pool", 0)
        loaded = prepared.loaded
        if not size or loaded is None:
            yield
            return
        if self.runner_name(request) != "local":
            self.observer.notice(
                f"--pool {size}: warm pools live in this process; the "
                f"{self.runner_name(request)!r} runner deploys every trial's envs"
            )
            yield
            return
        from agent_env.engine.instance import WARM_POOL
        from agent_env.runs.pool import DEFAULT_MIN_FREE_MB, TaskPools

        pools = TaskPools(
            int(size),
            reuse={loaded.bundle.name: loaded.bundle.reuse},
            min_free_mb=float(config.get("run", "pool_min_free_mb", DEFAULT_MIN_FREE_MB)),
            notice=self.observer.notice,
        )
        trial_run = prepared.trial_run
        async with pools.running():
            trial_run.resources[WARM_POOL] = pools
            for task in loaded.tasks:
                pools.fill(loaded.bundle.name, task, trial_run.services)
            try:
                yield
            finally:
                trial_run.resources.pop(WARM_POOL, None)

    async def fill_pool(
        self, pools: TaskPools, loaded: LoadedBundle, request: RunRequest, task: Task
    ) -> None:
        """Fill `task`'s warm pool ahead with the engine services `request` would run with (a
        front end that runs one instance at a time: the OpenEnv server)."""
        pools.fill(loaded.bundle.name, task, await self.services(loaded, request))

    async def run(self, request: RunRequest, *, signals: Sequence[int] = ()) -> RunResult:
        """`prepare` then `execute`."""
        return await self.execute(await self.prepare(request), signals=signals)

    # ---- record ----------------------------------------------------------------------------

    async def record(self, prepared: PreparedRun, *, signals: Sequence[int] = ()) -> RunResult:
        """The run's result (summary, exit code, records), `--export` written, shown to the
        observer."""
        from agent_env.engine import trials as engine_trials

        request, trial_run = prepared.request, prepared.trial_run
        documents = self.session.stores.documents
        summary = trial_run.results.summary()

        async def stored() -> tuple[bool, list[dict[str, Any]]]:
            run_doc = await documents.get(RUNS, trial_run.run_id)
            if run_doc is not None and (trial_run.not_started or trial_run.budget is not None):
                run_doc = await self._stopped_for_budget(run_doc, trial_run)
            if request.export and run_doc is not None:
                from agent_env.reporting.export import RowsFormat, export_runs

                path = Path(request.export).expanduser()
                with open(path, "wb") as out:
                    rows = await export_runs(self.session.stores, RowsFormat(), [run_doc], out)
                self.observer.notice(f"wrote {rows} trial row(s) to {path}")
            single = not request.many and int((run_doc or {}).get("trials") or 1) == 1
            records: list[dict[str, Any]] = []
            if prepared.instances is not None:
                records = await _records_of(documents, prepared.instances) + prepared.decided
            elif run_doc is not None and (request.as_json or single):
                records = await engine_trials.gather_records(documents, run_doc)
            return single, records

        single, records = await shielded(stored())
        result = RunResult(
            run_id=trial_run.run_id,
            exit_code=exit_code(summary, signals),
            summary=summary,
            records=records,
            evals=[
                {"name": e["name"], "passed": e["passed"], "total": e["trials"]}
                for e in summary["evals"]
            ],
            single=single or prepared.instances is not None,
            unfinished=sum(1 for t in trial_run.trials if t.record is None),
            not_run=_not_run(prepared),
        )
        shown = self.observer.finished(result)
        if inspect.isawaitable(shown):
            await shown
        return result

    async def _stopped_for_budget(self, run_doc: dict[str, Any], trial_run: Any) -> dict[str, Any]:
        """The run document saying the budget stopped it (`stopped`), stored and told; a
        resume that the budget let finish drops the earlier `stopped`."""
        if not trial_run.not_started:
            if "stopped" in run_doc:
                run_doc = {k: v for k, v in run_doc.items() if k != "stopped"}
                await self.session.stores.documents.put(RUNS, trial_run.run_id, run_doc)
            return run_doc
        stopped = {
            "reason": "budget",
            "budget_usd": trial_run.budget,
            "spent_usd": round(trial_run.spent, 6),
            "not_started": trial_run.not_started,
        }
        run_doc = {**run_doc, "stopped": stopped}
        await self.session.stores.documents.put(RUNS, trial_run.run_id, run_doc)
        self.observer.notice(
            f"stopped for budget: ${trial_run.spent:.4f} spent of ${trial_run.budget:.4f}; "
            f"{trial_run.not_started} trial(s) not started"
        )
        return run_doc

    # ---- one trial of a recorded run, elsewhere (a distributed runner's worker) ------------

    async def worker_trial(
        self,
        loaded: LoadedBundle,
        run_doc: Mapping[str, Any],
        ticket: TrialTicket,
        request: RunRequest,
        *,
        retry_infra: int,
    ) -> tuple[Trial, Callable[[], TaskInstanceRecord | None]]:
        """The trial `ticket` of recorded run `run_doc` (resumed when its attempt started),
        and a function that returns its final record once it ran."""
        from agent_env.engine.seeds import SeedTable
        from agent_env.engine.stored import latest_attempt
        from agent_env.engine.trials import Trial, TrialRun
        from agent_env.errors import AgentEnvError
        from agent_env.runs.fork import reattach

        bundle = loaded.bundle
        if ticket.task not in bundle.tasks:
            raise AgentEnvError(f"bundle {bundle.name!r} has no task {ticket.task!r}")
        documents = self.session.stores.documents
        record, attempt = await latest_attempt(documents, ticket.slot)
        resume = None
        if record is not None and ticket.attempt <= attempt:
            resume = record
        tasks = {t.name: t for t in loaded.tasks}
        collector = _Collector()
        trial_run = TrialRun(
            await self.services(loaded, request),
            run_id=str(run_doc["id"]),
            bundle_info=run_doc.get("bundle") or {},
            tasks={ticket.task: tasks.get(ticket.task, bundle.tasks[ticket.task])},
            task_versions=loaded.materialized.task_versions,
            seeds=SeedTable(
                entries=tuple(run_doc.get("seed_table") or ()), source=run_doc.get("seed_source")
            ),
            retry_infra=retry_infra,
            meta=run_doc.get("meta") or {},
            # duck-typed: a worker keeps its one record instead of a run's Results
            results=collector,  # type: ignore[arg-type]
            # a child of a fork restores its snapshot here too (read from the shared stores)
            resources=await reattach(self.session, (run_doc.get("meta") or {}).get("forked_from")),
        )
        trial = Trial(
            trial_run,
            ticket.slot,
            ticket.task,
            ticket.index,
            resume=resume,
            attempt=max(ticket.attempt, attempt if resume is not None else 0),
        )
        return trial, lambda: collector.record


class _Collector:
    """Stands in for a run's `Results` in a worker: keeps the final record of its one trial."""

    def __init__(self) -> None:
        self.record: TaskInstanceRecord | None = None

    def add(self, record: TaskInstanceRecord) -> None:
        self.record = record


def _not_run(prepared: PreparedRun) -> list[str]:
    """The tasks no eval names that running every eval left out."""
    chosen = prepared.loaded.selection if prepared.loaded is not None else None
    return [t.name for t in chosen.not_run] if chosen is not None else []


async def _records_of(documents: Any, ids: Sequence[str]) -> list[dict[str, Any]]:
    from agent_env.engine.records import COLLECTION

    out = []
    for ident in ids:
        doc = await documents.get(COLLECTION, ident)
        if doc is not None:
            out.append(doc)
    return out


async def run_with_progress(
    runner: Runner, trials: Sequence[Trial], progress: Progress | None
) -> None:
    """`runner.run(trials)` with the progress ticker beside it; the last line at the end."""
    if progress is None:
        await runner.run(trials)
        return
    ticker = asyncio.ensure_future(progress.ticker())
    try:
        await runner.run(trials)
    finally:
        ticker.cancel()
        try:
            await asyncio.wait((ticker,))
        finally:
            progress.close()


__all__ = [
    "EXIT_FAILED",
    "Progress",
    "EXIT_OK",
    "EXIT_SIGNAL",
    "LoadedBundle",
    "PreparedRun",
    "RunObserver",
    "RunPipeline",
    "RunRequest",
    "RunResult",
    "exit_code",
]
