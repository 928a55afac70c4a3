"""Running a stored task or eval by id (`task run`, `task run-batch`, `eval run`): the same run
service, trial planning, progress and summary as `agent-env run`, over the stored versions.
`run_options` is the one option block those commands share; the run is the pipeline's
(`agent_env.runs.pipeline`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import click

from agent_env.cli.toolkit import StoredRef
from agent_env.runs.service import RunRequest


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
    from agent_env.cli.toolkit import EXIT_FAILED, EXIT_SIGNAL, guarded

    request = RunRequest(
        stored=StoredRef(kind=kind, ref=kw["ref"], version=kw["version"]),
        start_step=kw["start_step"],
        front_end=f"{kind} run",
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
    output_dir: Path | None = kw["output_dir"]

    async def outer() -> int:
        async def main(caught: list[int]) -> int:
            return await _main(request, output_dir, caught)

        code, caught = await guarded(main, default=EXIT_FAILED)
        return EXIT_SIGNAL.get(caught[0], 130) if caught else code

    return anyio.run(outer)


async def _main(request: RunRequest, output_dir: Path | None, caught: list[int]) -> int:
    from agent_env.cli.toolkit import RunPipeline, Session, err, observer

    session = await Session.open()
    try:
        pipeline = RunPipeline(session, observer(session, request, caught))
        result = await pipeline.run(request, signals=caught)
        if output_dir is not None:
            with anyio.CancelScope(shield=True):
                count = await write_records(session.stores.documents, result.run_id, output_dir)
            err(f"wrote {count} task instance record(s) to {output_dir}")
        return result.exit_code
    finally:
        await session.close()


async def write_records(documents: Any, run_id: str, folder: Path) -> int:
    """Write every task instance record of run `run_id` as `<folder>/<instance id>.json`."""
    from agent_env.cli.toolkit import read_run, run_records
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
