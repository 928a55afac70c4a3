"""What `env deploy` and `a2a-agent deploy` share: run a stored env's or agent's one deploy step
through the run pipeline, print where it answers, hold it until Ctrl-C, then tear it down."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import click

from agentenv_stored_entities.commands.group import echo_json

#: (session, the deploy's record) -> (what `--json` prints, the lines printed otherwise)
Describe = Callable[[Any, dict[str, Any]], Awaitable[tuple[dict[str, Any], list[str]]]]


def deploy_and_hold(
    kind: str,
    ref: str,
    version: int | None,
    provider: str | None,
    step: dict[str, Any],
    as_json: bool,
    describe: Describe,
) -> int:
    """Exit codes: 0 deployed (and torn down on Ctrl-C), 1 it did not come up, 130 Ctrl-C
    before it was up."""
    from agent_env.cli.toolkit import guarded

    held: list[int] = []

    async def main(caught: list[int]) -> int:
        return await _deploy(kind, ref, version, provider, step, as_json, describe, held)

    async def outer() -> int:
        code, caught = await guarded(main, default=1)
        if caught and held:  # the signal ended the hold: torn down as asked
            click.echo("torn down", err=True)
            return 0
        return 130 if caught else code

    return anyio.run(outer)


async def _deploy(
    kind: str,
    ref: str,
    version: int | None,
    provider: str | None,
    step: dict[str, Any],
    as_json: bool,
    describe: Describe,
    held: list[int],
) -> int:
    from agent_env.cli.toolkit import CliObserver, RunPipeline, Session, StoredRef, err
    from agent_env.runs.service import RunRequest

    request = RunRequest(
        stored=StoredRef(kind=kind, ref=ref, version=version, step=step),
        keep=True,
        provider=provider,
        as_json=as_json,
        front_end="env deploy" if kind == "env" else "a2a-agent deploy",
    )
    session = await Session.open()
    try:
        pipeline = RunPipeline(session, CliObserver(request, show_result=False))
        result = await pipeline.run(request)
        (record,) = result.records
        entity = record["bundle"]["provenance"]
        if record.get("failure"):
            err(
                f"Error: {kind} {entity[kind]} v{entity['version']} did not come up: "
                f"{record['failure'].get('message')}"
            )
            return 1
        up, lines = await describe(session, record)
        if as_json:
            echo_json(up)
        else:
            for line in lines:
                click.echo(line)
        sys.stdout.flush()
        err("press Ctrl-C to tear it down")
        held.append(0)
        await anyio.sleep_forever()
        return 0
    finally:
        await session.close()
