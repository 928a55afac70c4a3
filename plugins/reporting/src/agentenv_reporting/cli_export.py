"""`agent-env runs export RUN...`: every trial of the runs in one file, in an export format
(`agent_env.exports.ExportFormat`: the kernel's `rows`, the formats plugins register), to
stdout, to a file (`-o`, written whole or not at all) or pushed as a dataset (`--to`)."""

from __future__ import annotations

from typing import Any

import anyio
import click

from agent_env.results import with_configured_stores


async def _export_runs(stores: Any, run_ids: tuple[str, ...], write: Any) -> Any:
    """The runs named (did-you-mean errors for a task instance or an unknown id), then
    `await write(stores, runs)`."""
    from agent_env.cli.toolkit import load_record, read_run

    runs = []
    for run_id in dict.fromkeys(run_ids):
        run = await read_run(stores.documents, run_id)
        if run is None:
            await load_record(stores.documents, run_id)  # the did-you-mean error
            raise click.UsageError(f"{run_id!r} is a task instance; export takes run ids (run-...)")
        runs.append(run)
    return await write(stores, runs)


def _export_format(name: str) -> Any:
    """The export format `name`, or a usage error naming the known ones."""
    from agent_env.errors import PluginError
    from agent_env.plugins import get_plugin_manager

    registry = get_plugin_manager().export_formats
    try:
        return registry.get(name)()
    except PluginError as exc:
        raise click.UsageError(f"--format: {exc}") from None


@click.command("export")
@click.argument("run_ids", metavar="RUN...", nargs=-1, required=True)
@click.option(
    "-f",
    "--format",
    "fmt_name",
    default="rows",
    show_default=True,
    metavar="NAME",
    help="rows (one flat JSON line per trial), chat-jsonl (OpenAI chat conversations with "
    "tool calls, for trainers) or parquet (the same rows as a Parquet file); "
    "plugins add more.",
)
@click.option("-o", "--output", metavar="FILE", help="Write to FILE instead of stdout.")
@click.option(
    "--to",
    "destination",
    metavar="DEST",
    help="Push the export as a dataset instead (hf://ORG/REPO[@BRANCH] with agentenv-hf-hub).",
)
@click.option("-m", "--message", help="The commit message of a push (--to).")
@click.option(
    "--attempts",
    is_flag=True,
    help="Also export the attempts that --retry-infra superseded.",
)
def export(
    run_ids: tuple[str, ...],
    fmt_name: str,
    output: str | None,
    destination: str | None,
    message: str | None,
    attempts: bool,
) -> None:
    """Every trial of RUN... in one file. `rows` (the default): task id and version, bundle
    digest, agent, model, seed, scores, outcome, failure class, durations, costs, task
    instance id; `chat-jsonl` / `parquet`: the conversation in the OpenAI chat format with
    tool calls and results, plus the same fields (for trainers; `datasets.load_dataset` reads
    them)."""
    import functools
    import sys

    from agent_env.cli.toolkit import err

    fmt = _export_format(fmt_name)
    if output and destination:
        raise click.UsageError("give -o/--output or --to, not both")
    if destination:
        from agentenv_reporting.dataset import push

        write = functools.partial(
            push, fmt=fmt, destination=destination, message=message, attempts=attempts
        )
        done = anyio.run(with_configured_stores, _export_runs, run_ids, write)
        where = f" (commit {done['commit']})" if done.get("commit") else ""
        click.echo(f"pushed {done['rows']} trial row(s) to {done['destination']}{where}")
        return
    if output is None and fmt.binary:
        raise click.UsageError(f"--format {fmt.type} is binary: write it to a file with -o FILE")
    if output is None:
        out = sys.stdout.buffer
        anyio.run(with_configured_stores, _export_runs, run_ids, _writer(fmt, out, attempts))
        out.flush()
        return
    from pathlib import Path

    target = Path(output)
    partial = target.with_name(target.name + ".partial")
    try:  # a failed export leaves FILE as it was
        with open(partial, "wb") as stream:
            rows = anyio.run(
                with_configured_stores, _export_runs, run_ids, _writer(fmt, stream, attempts)
            )
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    err(f"wrote {rows} trial row(s) to {output}")


def _writer(fmt: Any, out: Any, attempts: bool) -> Any:
    """`write(stores, runs)`: the runs' trials in `fmt` to `out`; the number of rows."""
    from agent_env.cli.toolkit import export_runs

    async def write(stores: Any, runs: list[Any]) -> int:
        return await export_runs(stores, fmt, runs, out, attempts=attempts)

    return write
