"""The steps of running a bundle that every front end shares; nothing here knows about click.

`load_bundle` loads, validates and materializes a bundle; `check_provider` refuses an unknown
sandbox provider before anything runs; `execute` runs instances through the configured runner
(with an optional progress ticker) and always produces the summary, also when cancelled.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
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
