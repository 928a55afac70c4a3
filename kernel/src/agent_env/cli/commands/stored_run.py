"""Running a stored task or eval by id (`task run`, `task run-batch`, `eval run`): the same run
service, trial planning, progress and summary as `agent-env run`, over the stored versions.
`run_options` is the one option block those commands share."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import attrs
import click

from agent_env.runs.options import RunOptions


def run_options(what: str, *, trials: bool = True) -> Callable[[Any], Any]:
    """The options of `task run` / `eval run` (`what` names the entity in their help);
    `trials=False` leaves out `--k` (run-batch takes one trial per seed row)."""

    def decorate(f: Any) -> Any:
        options = [
            click.option("--id", "ref", required=True, help=f"The stored {what} id (or its name)."),
            click.option(
                "--version",
                type=click.IntRange(min=1),
                help=f"{what.capitalize()} version (default latest).",
            ),
            click.option(
                "--sandbox", "provider", metavar="NAME", help="Sandbox provider for every step."
            ),
            click.option(
                "--agent", metavar="NAME", help="Deploy this agent in every deploy_agent step."
            ),
            click.option(
                "--agent-model", "--model", "model", metavar="NAME", help="Model for every agent."
            ),
            click.option("--judge-model", metavar="NAME", help="Model for every judge."),
            click.option("--user-model", metavar="NAME", help="Model for every simulated user."),
            click.option(
                "--retry-infra", type=click.IntRange(min=0), help="Re-run infra failures N times."
            ),
            click.option(
                "--max-concurrency",
                "--concurrency",
                "concurrency",
                type=click.IntRange(min=1),
                help="At most this many trials at once.",
            ),
            click.option(
                "--start-step",
                type=click.IntRange(min=0),
                help="Start every task at this 0-based step; the steps before it do not run.",
            ),
            click.option(
                "--output-dir",
                type=click.Path(file_okay=False, path_type=Path),
                help="Also write each task instance's record as <instance id>.json here.",
            ),
            click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON."),
        ]
        if trials:
            options.append(
                click.option(
                    "--k",
                    "--trials",
                    "trials",
                    type=click.IntRange(min=1),
                    default=1,
                    show_default=True,
                    help="Run each task this many times (pass rates, pass@k).",
                )
            )
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def run_stored(kind: str, kw: dict[str, Any]) -> int:
    """Exit code of running stored `kind` with the options of `run_options` (Ctrl-C and
    SIGTERM tear everything down)."""
    from agent_env.cli.commands.run_output import EXIT_FAILED, EXIT_SIGNAL
    from agent_env.cli.signals import guarded

    options = RunOptions(
        spec=None,
        as_json=kw["as_json"],
        provider=kw["provider"],
        agent=kw["agent"],
        model=kw["model"],
        judge_model=kw["judge_model"],
        user_model=kw["user_model"],
        trials=kw.get("trials", 1),
        concurrency=kw["concurrency"],
        retry_infra=kw["retry_infra"],
        seeds=kw.get("seeds"),
    )
    stored = _Stored(kind, kw["ref"], kw["version"], kw["start_step"], kw["output_dir"])

    async def outer() -> int:
        async def main(caught: list[int]) -> int:
            return await _main(stored, options, caught)

        code, caught = await guarded(main, default=EXIT_FAILED)
        return EXIT_SIGNAL.get(caught[0], 130) if caught else code

    return anyio.run(outer)


@attrs.frozen
class _Stored:
    kind: str
    ref: str
    version: int | None
    start_step: int | None
    output_dir: Path | None


def start_at(tasks: list[Any], start: int) -> tuple[list[Any], list[str]]:
    """`tasks` without their first `start` steps, and a line per task saying what is skipped."""
    from agent_env.errors import AgentEnvError

    out, lines = [], []
    for task in tasks:
        if start >= len(task.steps):
            raise AgentEnvError(
                f"--start-step {start}: task {task.name!r} has {len(task.steps)} steps "
                f"(0 to {len(task.steps) - 1}): " + ", ".join(s.id for s in task.steps)
            )
        skipped = [s.id for s in task.steps[:start]]
        out.append(attrs.evolve(task, steps=list(task.steps[start:])))
        lines.append(
            f"--start-step {start}: task {task.name} starts at step {task.steps[start].id!r}"
            + (f"; not run: {', '.join(skipped)}" if skipped else "")
        )
    return out, lines


async def _main(stored: _Stored, options: RunOptions, caught: list[int]) -> int:
    from agent_env.cli.commands import run_trials
    from agent_env.cli.commands.run_output import err
    from agent_env.engine.run import Session
    from agent_env.entities.runnable import stored_bundle
    from agent_env.runs import overrides, selection, service

    kind = stored.kind
    session = await Session.open()
    try:
        service.check_provider(session, options.provider)
        bundle, materialized, root = await stored_bundle(
            session.stores, session.plugins, session.config.home, kind, stored.ref, stored.version
        )
        names = [root.content.get("name") or root.entity_id.rpartition("/")[2]]
        chosen = selection.select(
            bundle, names if kind == "task" else (), names if kind == "eval" else ()
        )
        for line in materialized.lines:
            err(line)
        tasks, notes = overrides.apply(chosen.tasks, options)
        if stored.start_step:
            tasks, more = start_at(tasks, stored.start_step)
            notes += more
        for line in notes:
            err(line)
        services = await run_trials.services(session, materialized, options)
        trial_run = await run_trials.plan(
            session, services, options, bundle, materialized, tasks, chosen.evals, str(bundle.root)
        )
        code = await run_trials.execute(session, trial_run, options, caught)
        if stored.output_dir is not None:
            with anyio.CancelScope(shield=True):
                count = await write_records(
                    session.stores.documents, trial_run.run_id, stored.output_dir
                )
            err(f"wrote {count} task instance record(s) to {stored.output_dir}")
        return code
    finally:
        await session.close()


async def write_records(documents: Any, run_id: str, folder: Path) -> int:
    """Write every task instance record of run `run_id` as `<folder>/<instance id>.json`."""
    from agent_env.engine.stored import read_run, run_records
    from agent_env.fsutil import atomic_write

    run = await read_run(documents, run_id)
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    if run is None:
        return count
    async for record in run_records(documents, run):
        data = record.to_dict()
        atomic_write(folder / f"{data['id']}.json", json.dumps(data, indent=2, default=str) + "\n")
        count += 1
    return count
