"""`agent-env run [SPEC]`: materialize a bundle, run its tasks as DAGs, print outcomes.

Exit codes: 0 nothing failed; 1 a task failed or scored below 1 (or an error); 2 usage error
or an invalid bundle (nothing ran); 130 interrupted by Ctrl-C; 143 terminated by SIGTERM.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING

import click

from agent_env.cli.commands.run_output import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_SIGNAL,
    EXIT_USAGE,
    check_provider,
)
from agent_env.cli.commands.run_output import (
    err as _err,
)
from agent_env.cli.commands.run_output import (
    show_plan as _show_plan,
)

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.runs.options import RunOptions


@click.command("run")
@click.argument("spec", required=False)
@click.option(
    "--task", "task_names", metavar="NAME", multiple=True, help="Run only this task (repeatable)."
)
@click.option(
    "--eval",
    "eval_names",
    metavar="NAME",
    multiple=True,
    help="Run the tasks of this eval and report it (repeatable).",
)
@click.option("--keep", is_flag=True, help="Keep the sandboxes until Ctrl-C.")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Validate and show what would be written and run; write nothing.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option(
    "--resume",
    metavar="ID",
    help="Resume an interrupted task instance (ti-...) or every unfinished one of a run (run-...).",
)
@click.option(
    "--sandbox",
    "sandbox_provider",
    metavar="NAME",
    help="Sandbox provider every step deploys on, also those that name their own "
    "sandbox_type; comma-separated for a fallback chain such as local,docker (default: the "
    "step's own, else [sandbox] default).",
)
@click.option(
    "--agent",
    "agent",
    metavar="NAME",
    help="Deploy this agent in every deploy_agent step (a bundle agent or an agent type; "
    "oracle runs only the tasks that ship a solution).",
)
@click.option("--model", "model", metavar="NAME", help="Use this model for every agent.")
@click.option(
    "--judge-model",
    metavar="NAME",
    help="Use this model for every judge (rubrics_verifier default_model).",
)
@click.option(
    "--user-model",
    metavar="NAME",
    help="Use this model for every simulated user (prompt_agent user_model).",
)
@click.option(
    "--trials",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run every selected task this many times and report pass rates, intervals, pass@k.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    help="At most this many trials at once (default: [run] concurrency, 8).",
)
@click.option(
    "--sandbox-concurrency",
    type=click.IntRange(min=1),
    help="At most this many sandboxes being created at once (default: [run] "
    "sandbox_concurrency, 8).",
)
@click.option(
    "--pool",
    type=click.IntRange(min=0),
    metavar="N",
    help="Keep N deployed instances of each task warm: a trial resets their envs "
    "(data/reset) instead of deploying them (default: [run] pool, 0).",
)
@click.option(
    "--retry-infra",
    type=click.IntRange(min=0),
    help="Re-run a trial that failed for an infrastructure reason up to N times (default 0).",
)
@click.option(
    "--budget-usd",
    type=click.FloatRange(min=0, min_open=True),
    help="Stop starting new trials once the trials' cost reaches this many US dollars "
    "(priced by the config's [prices]; trials in flight finish; default: [run] budget_usd).",
)
@click.option(
    "--seeds",
    "seeds_file",
    metavar="FILE",
    help="Seed table for {placeholder} substitution per trial (default: the bundle's seeds.toml).",
)
@click.option(
    "--export",
    "export_file",
    metavar="FILE",
    help="Also write one JSON line per trial to FILE.",
)
@click.option(
    "--wide",
    is_flag=True,
    help="Show the pass@k columns in the results table too (wider than 100 columns).",
)
@click.option(
    "--runner",
    metavar="NAME",
    help="Run the trials with this runner: local (this process) or one a plugin adds, such as "
    "ray (default: [run] runner).",
)
@click.option(
    "--address",
    "runner_address",
    metavar="ADDRESS",
    help="The cluster a distributed runner connects to, e.g. a Ray head's host:port "
    "(default: [run.<runner>] address).",
)
@click.option(
    "--from-snapshot",
    "from_snapshot",
    metavar="ID[@N]",
    help="Start every trial from this task snapshot (taken by a snapshot_task step): the "
    "snapshot's task runs, and restores it at the step that took it.",
)
@click.option(
    "--fork",
    "fork",
    type=click.IntRange(min=1),
    metavar="N",
    help="With --from-snapshot: deploy N independent children from the snapshot, all at once.",
)
@click.option(
    "--allow-unisolated",
    is_flag=True,
    help="Run untrusted agents even where local sandboxes cannot be isolated (bubblewrap "
    "missing or refused); their rewards then prove nothing against a hostile agent "
    "(default: [sandbox.local] allow_unisolated, false).",
)
def run(
    spec: str | None,
    task_names: tuple[str, ...],
    eval_names: tuple[str, ...],
    keep: bool,
    dry_run: bool,
    as_json: bool,
    resume: str | None,
    sandbox_provider: str | None,
    agent: str | None = None,
    model: str | None = None,
    judge_model: str | None = None,
    user_model: str | None = None,
    trials: int = 1,
    concurrency: int | None = None,
    sandbox_concurrency: int | None = None,
    pool: int | None = None,
    retry_infra: int | None = None,
    budget_usd: float | None = None,
    seeds_file: str | None = None,
    export_file: str | None = None,
    wide: bool = False,
    runner: str | None = None,
    runner_address: str | None = None,
    from_snapshot: str | None = None,
    fork: int | None = None,
    allow_unisolated: bool = False,
) -> int:
    """Run the tasks of bundle SPEC (a folder, an installed bundle NAME or PACKAGE/NAME, or
    e.g. hf://org/repo).

    Without --task or --eval, run every eval (and say which tasks no eval names), or every
    task of a bundle without evals. Without SPEC, list the installed bundles. Progress goes to stderr, the summary to stdout.
    Exit codes: 0 ok, 1 a task failed or scored below 1, 2 usage or invalid bundle,
    130 Ctrl-C, 143 SIGTERM.
    """
    if resume and (spec or task_names or eval_names or dry_run or trials != 1 or seeds_file):
        raise click.UsageError(
            "--resume ID takes no SPEC, --task, --eval, --dry-run, --trials or --seeds"
        )
    if fork is not None and not from_snapshot:
        raise click.UsageError("--fork N forks a snapshot: give --from-snapshot ID too")
    if from_snapshot and (resume or eval_names or trials != 1):
        raise click.UsageError(
            "--from-snapshot runs the snapshot's task: it takes no --resume, --eval or "
            "--trials (use --fork N for N children)"
        )
    if not spec and not resume:
        if task_names or eval_names or dry_run or keep or judge_model or user_model:
            raise click.UsageError(
                "give a bundle SPEC (run `agent-env run` to list installed ones)"
            )
        return _list_bundles(as_json)
    from agent_env.errors import BundleError
    from agent_env.runs.options import RunOptions

    options = RunOptions(
        spec=spec,
        task_names=task_names,
        eval_names=eval_names,
        keep=keep,
        dry_run=dry_run,
        as_json=as_json,
        resume=resume,
        provider=sandbox_provider,
        agent=agent,
        model=model,
        judge_model=judge_model,
        user_model=user_model,
        trials=trials,
        concurrency=concurrency,
        sandbox_concurrency=sandbox_concurrency,
        pool=pool,
        retry_infra=retry_infra,
        budget_usd=budget_usd,
        seeds=seeds_file,
        export=export_file,
        wide=wide,
        runner=runner,
        runner_address=runner_address,
        from_snapshot=from_snapshot,
        fork=fork,
    )
    try:
        return asyncio.run(_guarded(options, allow_unisolated))
    except BundleError as exc:
        _err(f"Error: {exc}")
        return EXIT_USAGE


def _list_bundles(as_json: bool) -> int:
    from agent_env.bundles import list_installed_bundles

    bundles = list_installed_bundles()
    rows = [
        {
            "name": b.name,
            "dist": b.dist,
            "version": b.version,
            "id_prefix": b.id_prefix,
            "path": str(b.path) if b.path else None,
            "problem": b.problem,
        }
        for b in bundles
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return EXIT_OK
    if not rows:
        click.echo("No bundles are installed. Run a bundle folder with: agent-env run PATH")
        return EXIT_OK
    click.echo("Installed bundles (run one with: agent-env run NAME):")
    width = max(len(b.name) for b in bundles)
    for r in rows:
        extra = f"  ({r['problem']})" if r["problem"] else ""
        click.echo(f"  {r['name']:<{width}}  {r['dist']} {r['version']}{extra}")
    return EXIT_OK


async def _guarded(options: RunOptions, allow_unisolated: bool = False) -> int:
    """`_main` in a scope SIGINT/SIGTERM cancel; the exit code."""
    from agent_env.cli.signals import guarded

    held: list[int] = []

    async def main(caught: list[int]) -> int:
        return await _main(options, caught, held, allow_unisolated=allow_unisolated)

    code, caught = await guarded(main, default=EXIT_FAILED)
    if caught and held:  # --keep: the signal only ended the hold
        return held[0]
    if caught:
        return EXIT_SIGNAL.get(caught[0], 130)
    return code


async def _main(
    options: RunOptions, caught: list[int], held: list[int], *, allow_unisolated: bool = False
) -> int:
    from agent_env.cli.commands.run_trials import observer
    from agent_env.engine.run import Session
    from agent_env.runs.pipeline import RunPipeline

    session = await Session.open()
    if allow_unisolated:  # before any provider is made from the settings
        session.config.values.setdefault("sandbox.local", {})["allow_unisolated"] = True
    try:
        check_provider(session, options.provider)
        pipeline = RunPipeline(session, observer(session, options, caught))
        if options.dry_run:
            loaded = await pipeline.load(options)
            return _show_plan(
                loaded.bundle,
                loaded.materialized,
                loaded.tasks,
                loaded.evals,
                options.as_json,
                options.trials,
            )
        code = (await pipeline.run(options, signals=caught)).exit_code
        live = list(session.sandboxes.live.values())
        if options.keep and live and not caught:
            held.append(code)
            _err(
                f"keeping {len(live)} sandbox(es): "
                + ", ".join(f"{s.provider}:{s.id}" for s in live)
                + "; press Ctrl-C to tear them down"
            )
            await asyncio.Event().wait()  # till a signal cancels it
        return code
    finally:
        await session.close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run.main(standalone_mode=True))
