"""The steps of running a bundle that every front end shares; nothing here knows about click.

`load_bundle` loads, validates and materializes a bundle; `check_provider` refuses an unknown
sandbox provider before anything runs; `plan` writes the run document; `execute` runs instances
through the configured runner (with an optional progress ticker) and always produces the
summary, also when cancelled. A front end that runs bundles in its own process (the explorer)
uses `open_session`, `prepare` and `execute`, as `agent-env run` does:

    session = await open_session()
    try:
        trial_run = await prepare(session, RunOptions(spec="hello"))
        await execute(session, trial_run.trials, options, lambda: 0)  # cancel: a cancel scope
    finally:
        await session.close()  # tears down what is still live
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from agent_env.runs.options import RunOptions


async def load_bundle(
    session: Any, spec: str, *, dry_run: bool = False, select: Callable[[Any], Any] | None = None
) -> tuple[Any, Any, Any]:
    """(bundle, materialized, what `select(bundle)` returned): `select` checks the selection
    before anything is written. The caller shows `materialized.lines` (what was stored)."""
    from agent_env.bundles import load_bundle as load
    from agent_env.bundles import materialize

    # a source plugin may download (hf://): keep the event loop free while it does
    bundle = await anyio.to_thread.run_sync(load, spec, session.plugins)
    selected = select(bundle) if select is not None else None
    materialized = await materialize(bundle, session.stores, dry_run=dry_run)
    return bundle, materialized, selected


def check_provider(session: Any, provider: str | None) -> None:
    """`PluginError` when `provider` (a name or a fallback chain `a,b`) names a provider no
    plugin registers; `SandboxError` when it is not a name or chain at all."""
    if provider is not None:
        from agent_env.sandbox import provider_chain

        provider_chain(provider, session.plugins.sandbox_providers)


def make_runner(session: Any, options: RunOptions, concurrency: int) -> Any:
    """The runner `options` (or `[run] runner`) names, built as `cls(concurrency=N, **settings)`
    with its `[run.<name>]` settings (when a plugin declares them) and `--address`."""
    config = session.config
    name = options.runner or config.get("run", "runner", "local") or "local"
    runner_cls = session.plugins.runners.get(name)
    settings = dict(config.values.get(f"run.{name}", {}))
    if options.runner_address:
        settings["address"] = options.runner_address
    return runner_cls(concurrency=concurrency, **settings)


async def run_with_progress(runner: Any, instances: list, progress: Any) -> None:
    """`runner.run(instances)` with the progress ticker beside it; the last line at the end."""
    if progress is None:
        await runner.run(instances)
        return
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(progress.ticker)
            await runner.run(instances)
            tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # the ticker never fails: the runner's own error, as a runner without progress raises it
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    finally:
        progress.close()


async def execute(
    session: Any,
    instances: list,
    options: RunOptions,
    report: Callable[[], Any],
    *,
    progress: Any = None,
) -> int:
    """Run `instances` with the configured runner and return what `report()` returns (the exit
    code); when cancelled, `report()` still runs (shielded) before the cancellation goes on."""
    config = session.config
    concurrency = options.concurrency or config.get("run", "concurrency", 8) or 8
    limit = options.sandbox_concurrency or config.get("run", "sandbox_concurrency", 8)
    session.sandboxes.create_limit = int(limit) if limit else None
    runner = make_runner(session, options, int(concurrency))

    async def summary() -> int:
        code = report()
        return await code if inspect.isawaitable(code) else code

    try:
        await run_with_progress(runner, instances, progress)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await summary()
        raise
    return await summary()


async def open_session() -> Any:
    """The session `agent-env run` opens (plugins, config from the current folder, stores,
    sandbox manager); `await session.close()` tears down what is still live."""
    from agent_env.engine.run import Session

    return await Session.open()


def spec_for_record(spec: str) -> str:
    """The bundle spec a run records: a folder as its absolute path, anything else as given."""
    from pathlib import Path

    path = Path(spec).expanduser()
    return str(path.resolve()) if path.is_dir() else spec


def check_agent(session: Any, bundle: Any, agent: str) -> Any:
    """`--agent` must name an agent folder of the bundle or a registered agent kind: the
    kind's class when it names one (None for a bundle agent folder); `BundleError` with a
    did-you-mean otherwise."""
    from agent_env.errors import BundleError, PluginError
    from agent_env.suggest import did_you_mean

    try:
        kinds = list(session.plugins.agents.names())
    except PluginError:
        kinds = []
    if agent in kinds:
        return session.plugins.agents.get(agent)
    if agent in bundle.agents:
        return None
    names = sorted({*bundle.agents, *kinds})
    raise BundleError(
        f"no agent {agent!r}{did_you_mean(agent, names)}; bundle agents: "
        f"{', '.join(sorted(bundle.agents)) or 'none'}; agent types: {', '.join(kinds) or 'none'}"
    )


def with_solution(bundle: Any, tasks: list, agent: str) -> tuple[list, list[str]]:
    """(the tasks that ship a solution (a step whose `has_solution()` is true), the names of
    those left out), for an agent whose kind `needs_solution`; `BundleError` when none does."""
    from agent_env.errors import BundleError

    kept = [t for t in tasks if any(s.has_solution() for s in t.steps)]
    if not kept:
        raise BundleError(
            f"--agent {agent}: no selected task of bundle {bundle.name!r} ships a solution "
            "(deploy_agent metadata.solution)"
        )
    return kept, [t.name for t in tasks if t not in kept]


def load_seeds(options: RunOptions, bundle: Any) -> Any:
    """The seed table of a run: `options.seeds` (a file), else the bundle's `seeds.toml`."""
    from agent_env.engine.seeds import load_seed_table

    path = Path(options.seeds).expanduser() if options.seeds else None
    return load_seed_table(path, bundle.root)


async def plan(
    session: Any,
    services: Any,
    options: RunOptions,
    bundle: Any,
    materialized: Any,
    tasks: list,
    evals: list,
    spec: str,
    *,
    progress: Any = None,
) -> Any:
    """Write the run document of `options.trials` trials of each of `tasks` (and the bundle's
    lineage) and return the `TrialRun` whose `trials` `execute` runs."""
    from agent_env.engine import run as engine_run
    from agent_env.engine import trials as engine_trials
    from agent_env.engine.records import new_id
    from agent_env.stores.lineage import record_bundle_run

    seeds = load_seeds(options, bundle)
    info = engine_run.bundle_info(bundle, spec)
    info["digest"] = await anyio.to_thread.run_sync(engine_trials.bundle_digest, bundle)
    run_id = new_id("run")
    retry = options.retry_infra
    trial_run = await engine_trials.plan_run(
        services,
        run_id=run_id,
        bundle=bundle,
        bundle_info=info,
        tasks=tasks,
        evals=evals,
        task_versions=materialized.task_versions,
        trials=options.trials,
        seeds=seeds,
        retry_infra=int(
            retry if retry is not None else session.config.get("run", "retry_infra", 0) or 0
        ),
        meta={"agent": options.agent, "model": options.model},
        progress=progress,
        options={
            "concurrency": options.concurrency,
            "sandbox_concurrency": options.sandbox_concurrency,
            "seeds": options.seeds,
            # what a worker in another process applies to its copy of the tasks
            "judge_model": options.judge_model,
            "user_model": options.user_model,
        },
    )
    await record_bundle_run(session.stores, run_id, bundle, materialized, tasks, evals)
    return trial_run


async def prepare(
    session: Any,
    options: RunOptions,
    *,
    reporter: Any = None,
    stored: tuple[str, str, int | None] | None = None,
) -> Any:
    """What `agent-env run SPEC` (or, with `stored=(kind, id, version)`, `agent-env task|eval
    run ID`) does before its trials run: check the sandbox provider, load and validate the
    bundle, select `options.task_names` / `eval_names` (every task when none), apply the
    overrides, materialize and write the run document; the `TrialRun`. `reporter` receives
    the engine's progress events (`agent_env.engine.services.Reporter`'s methods). Errors
    (`BundleError`, `PluginError`, `KeyError` for an unknown stored id) come before anything
    runs."""
    from agent_env.errors import BundleError
    from agent_env.runs import overrides, selection

    check_provider(session, options.provider)
    if stored is not None:
        from agent_env.entities.runnable import stored_bundle

        kind, ref, version = stored
        bundle, materialized, root = await stored_bundle(
            session.stores, session.plugins, session.config.home, kind, ref, version
        )
        names = [root.content.get("name") or root.entity_id.rpartition("/")[2]]
        chosen = selection.select(
            bundle, names if kind == "task" else (), names if kind == "eval" else ()
        )
        spec = str(bundle.root)
        selected = chosen.tasks
    elif options.spec:

        def select(bundle: Any) -> tuple[Any, list]:
            """Every check before anything is written: seeds, the selection, the agent."""
            load_seeds(options, bundle)
            chosen = selection.select(bundle, options.task_names, options.eval_names)
            if not chosen.tasks:
                raise BundleError(f"bundle {bundle.name!r} has no tasks to run")
            kind = check_agent(session, bundle, options.agent) if options.agent else None
            if kind is not None and kind.needs_solution:
                return chosen, with_solution(bundle, chosen.tasks, options.agent)[0]
            return chosen, chosen.tasks

        loaded = await load_bundle(session, options.spec, select=select)
        bundle, materialized, (chosen, selected) = loaded
        spec = spec_for_record(options.spec)
    else:
        raise BundleError("no bundle spec given")
    tasks, _notes = overrides.apply(selected, options)
    services = await session.services(
        artifacts=materialized.artifacts,
        reporter=reporter,
        default_provider=options.provider,
        keep=options.keep,
        agent=options.agent,
        model=options.model,
    )
    return await plan(session, services, options, bundle, materialized, tasks, chosen.evals, spec)
