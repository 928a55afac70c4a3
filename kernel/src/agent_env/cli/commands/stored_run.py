"""Running a stored task or eval by id (`task run`, `eval run`): the same run service, trial
planning, progress and summary as `agent-env run`, over the stored versions."""

from __future__ import annotations

import anyio

from agent_env.runs.options import RunOptions


def run_stored(kind: str, ref: str, version: int | None, options: RunOptions) -> int:
    """Exit code of running stored `kind` `ref` (Ctrl-C and SIGTERM tear everything down)."""
    from agent_env.cli.commands.run_output import EXIT_FAILED, EXIT_SIGNAL
    from agent_env.cli.signals import guarded

    async def outer() -> int:
        async def main(caught: list[int]) -> int:
            return await _main(kind, ref, version, options, caught)

        code, caught = await guarded(main, default=EXIT_FAILED)
        return EXIT_SIGNAL.get(caught[0], 130) if caught else code

    return anyio.run(outer)


async def _main(
    kind: str, ref: str, version: int | None, options: RunOptions, caught: list[int]
) -> int:
    from agent_env.cli.commands import run_trials
    from agent_env.cli.commands.run_output import err
    from agent_env.engine.run import Session
    from agent_env.entities.runnable import stored_bundle
    from agent_env.runs import overrides, selection, service

    session = await Session.open()
    try:
        service.check_provider(session, options.provider)
        bundle, materialized, root = await stored_bundle(
            session.stores, session.plugins, session.config.home, kind, ref, version
        )
        names = [root.content.get("name") or root.entity_id.rpartition("/")[2]]
        chosen = selection.select(
            bundle, names if kind == "task" else (), names if kind == "eval" else ()
        )
        for line in materialized.lines:
            err(line)
        tasks, notes = overrides.apply(chosen.tasks, options)
        for line in notes:
            err(line)
        services = await run_trials.services(session, materialized, options)
        trial_run = await run_trials.plan(
            session, services, options, bundle, materialized, tasks, chosen.evals, str(bundle.root)
        )
        return await run_trials.execute(session, trial_run, options, caught)
    finally:
        await session.close()
