"""`agent-env runs regrade` and `agent-env runs replay` (added to the kernel's `runs` group)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import click

from agent_env.results import with_configured_stores


@click.command("regrade")
@click.argument("run_id")
@click.option(
    "--verifier",
    "verifier_file",
    type=click.Path(exists=True, dir_okay=False),
    help="A JSON file of verifier steps (as in a task file), laid over the recorded ones: "
    "a same verifier_id is replaced, a new one added.",
)
@click.option(
    "--bundle",
    "bundle_spec",
    help="A bundle (folder, installed name, hf://...) whose tasks' verifiers replace the "
    "recorded ones, task by task name.",
)
@click.option(
    "--with-results",
    is_flag=True,
    help="Also read each trial's stored trajectories, so verifiers (and agentenv_score_call "
    "plugins) see every tool call with its result; one object read per prompt.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def regrade(
    run_id: str,
    verifier_file: str | None,
    bundle_spec: str | None,
    with_results: bool,
    as_json: bool,
) -> None:
    """Re-score RUN_ID's stored trials with new or changed verifiers, from the records alone
    (no agent or env is deployed), into a new run that points at RUN_ID (`regraded_from`).
    Verifiers that need a live env keep their recorded results."""
    if (verifier_file is None) == (bundle_spec is None):
        raise click.UsageError("give exactly one of --verifier FILE and --bundle SPEC")

    async def go(stores: Any) -> dict[str, Any]:
        from agent_env.config import load_config
        from agent_env.plugins import get_plugin_manager
        from agentenv_grading.regrade import (
            regrade_run,
            verifiers_from_bundle,
            verifiers_from_file,
        )

        plugins = get_plugin_manager()
        config = load_config(plugins=plugins)
        verifiers = (
            verifiers_from_file(verifier_file, plugins)
            if verifier_file is not None
            else verifiers_from_bundle(str(bundle_spec), plugins)
        )
        return await regrade_run(
            run_id,
            verifiers,
            plugins=plugins,
            stores=stores,
            config=config,
            with_results=with_results,
        )

    summary = anyio.run(with_configured_stores, go)
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    click.echo(
        f"{summary['run_id']}: regraded {summary['trials']} trial(s) of {run_id}: passed "
        f"{summary['passed_before']} -> {summary['passed_after']}, {summary['flipped']} "
        f"flipped, {summary['kept']} kept as recorded"
    )


@click.command("replay")
@click.argument("trial_id")
@click.option("--bundle", "bundle_spec", help="Deploy this bundle instead of the recorded one.")
@click.option("--sandbox", "provider", help="The sandbox provider the fresh env runs on.")
@click.option(
    "--ignore",
    "ignore",
    multiple=True,
    metavar="KEY",
    help="Drop JSON key KEY (at any depth) from both results before comparing (an id or a "
    "timestamp the env makes up); repeatable.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def replay(
    ctx: click.Context,
    trial_id: str,
    bundle_spec: str | None,
    provider: str | None,
    ignore: tuple[str, ...],
    as_json: bool,
) -> None:
    """Replay TRIAL_ID's recorded tool calls against a freshly deployed env (through the run
    pipeline) and compare each result with the recorded one. Times, durations and roles are
    never compared. Exit 1 when a call diverged."""
    from agentenv_grading.replay import replay_trial

    report = anyio.run(
        lambda: replay_trial(trial_id, bundle=bundle_spec, provider=provider, ignore=ignore)
    )
    if as_json:
        click.echo(json.dumps(report, indent=2, default=str))
    else:
        click.echo(
            f"{trial_id}: {report['reproduced']} of {report['calls']} call(s) reproduced "
            f"(replayed as {report['replayed_trial']} in {report['run_id']})"
        )
        for prompt in report["prompts"]:
            for row in prompt["calls"]:
                if row["same"]:
                    continue
                for field, values in row["fields"].items():
                    click.echo(
                        f"  {prompt['prompt_id']} call {row['index']} ({row['tool']}): {field}: "
                        f"recorded {json.dumps(values['recorded'], default=str)[:200]}, "
                        f"replayed {json.dumps(values['replayed'], default=str)[:200]}"
                    )
    if report["divergences"]:
        ctx.exit(1)
