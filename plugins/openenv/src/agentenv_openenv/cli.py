"""`agent-env openenv serve`: run the OpenEnv server of a bundle (uvicorn)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click


@click.group()
def openenv() -> None:
    """Serve a bundle's tasks as OpenEnv environments (docs/openenv.md)."""


def _splits(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        name, sep, spec = value.partition("=")
        if not sep or not name or not spec:
            raise click.BadParameter(
                f"{value!r} is not NAME=SPEC (e.g. train=./bundles/train)", param_hint="--split"
            )
        if name in out:
            raise click.BadParameter(f"split {name!r} is given twice", param_hint="--split")
        out[name] = spec
    return out


@openenv.command()
@click.argument("spec", required=False)
@click.option(
    "--split",
    "splits",
    multiple=True,
    metavar="NAME=SPEC",
    help="Serve bundle SPEC as split NAME (repeat; instead of SPEC).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    default=8000,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to listen on (0: a free one).",
)
@click.option(
    "--reward",
    default=None,
    metavar="ID",
    help="The verifier id (or step id) whose score is the reward (default: the mean "
    "of the scores that decide the outcome).",
)
@click.option(
    "--max-sessions",
    default=64,
    show_default=True,
    type=click.IntRange(1),
    help="Concurrent WebSocket sessions admitted.",
)
@click.option(
    "--reply-timeout",
    default=50.0,
    show_default=True,
    type=click.FloatRange(0, min_open=True),
    help="Seconds a reset or step waits for the task (its first prompt, next turn, a tool) "
    "before answering with an error observation; keep it under the clients' message timeout.",
)
@click.option(
    "--sampler",
    "samplers",
    multiple=True,
    metavar="[SPLIT=]SAMPLER",
    help="Draw the task of a reset to SPLIT (default: every split) that gives no index with "
    "SAMPLER, e.g. band:0.2-0.8 (tasks whose ledger pass rate is in the band; "
    "agentenv-grading). Repeatable.",
)
@click.option(
    "--pool",
    default=0,
    show_default=True,
    type=click.IntRange(0),
    metavar="N",
    help="Keep N deployed instances of each task warm: a reset then resets their envs "
    "(data/reset) instead of deploying them again (0: every reset deploys).",
)
@click.option(
    "--sandbox",
    default=None,
    metavar="PROVIDER",
    help="Deploy every episode on PROVIDER (or a fallback chain such as local,docker), "
    "whatever the tasks' sandbox_type says, as `agent-env run --sandbox`.",
)
@click.option(
    "--token",
    default=None,
    envvar="AGENT_ENV_OPENENV_TOKEN",
    metavar="TOKEN",
    help="Require 'Authorization: Bearer TOKEN' on every request but /health (openenv's "
    "clients: headers=...). Use it whenever agents run in local sandboxes on this machine: "
    "they share its loopback. Also read from AGENT_ENV_OPENENV_TOKEN.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON line {url, env_name, splits, token_required} when ready.",
)
def serve(
    spec: str | None,
    splits: tuple[str, ...],
    host: str,
    port: int,
    reward: str | None,
    max_sessions: int,
    reply_timeout: float,
    samplers: tuple[str, ...],
    pool: int,
    sandbox: str | None,
    token: str | None,
    as_json: bool,
) -> None:
    """Serve every task of bundle SPEC (a folder, an installed bundle, hf://...) as an OpenEnv
    environment: `all` plus one split per eval; with --split, one split per bundle.

    Each WebSocket session resets to a task (split and index, or task name), acts through the
    task's env tools plus `end_turn`, and gets the task's verifier score as its reward.
    Ctrl-C abandons open episodes and tears their sandboxes down.
    """
    mapping = _splits(splits)
    if (spec is None) == (not mapping):
        raise click.UsageError("give a bundle SPEC or --split NAME=SPEC (not both)")
    from agentenv_openenv.app import build_app

    try:
        app = build_app(
            mapping or spec,
            reward=reward,
            max_concurrent_envs=max_sessions,
            reply_timeout=reply_timeout,
            samplers=_samplers(samplers),
            pool=pool,
            sandbox=sandbox,
            token=token,
        )
    except ValueError as e:
        hint = next(
            (f"--{word}" for word in ("sampler", "pool", "token") if word in str(e)), "--reward"
        )
        raise click.BadParameter(str(e), param_hint=hint) from None
    _run(app, host, port, as_json, token_required=token is not None)


def _samplers(values: tuple[str, ...]) -> dict[str, str]:
    """`[SPLIT=]SAMPLER` values as split -> sampler; a bare SAMPLER is for every split (`*`)."""
    out: dict[str, str] = {}
    for value in values:
        split, sep, sampler = value.partition("=")
        out[split if sep else "*"] = sampler if sep else value
    return out


#: Said when serving without a token (the default, as the existing product serves).
NO_TOKEN_WARNING = (
    "agent-env: warning: no --token: any process that reaches this address, an agent in a "
    "local sandbox on this machine included, can play episodes here and learn the reward of "
    'an answer before giving it; pass --token (docs/openenv.md, "A token")'
)


def _run(app: Any, host: str, port: int, as_json: bool, *, token_required: bool) -> None:
    import uvicorn

    runtime = app.state.agentenv_runtime
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    served = runtime.served

    original = server.startup

    async def startup(sockets: Any = None) -> None:
        await original(sockets=sockets)
        bound = port
        for s in server.servers:
            for sock in s.sockets:
                bound = sock.getsockname()[1]
        url = f"http://{host}:{bound}"
        counts = {name: len(tasks) for name, tasks in served.splits.items()}
        if as_json:
            ready = {"url": url, "env_name": served.env_name, "splits": counts}
            click.echo(json.dumps({**ready, "token_required": token_required}))
            sys.stdout.flush()
        listed = ", ".join(f"{n} ({c})" for n, c in counts.items())
        auth = "; a bearer token is required" if token_required else ""
        click.echo(
            f"serving {served.env_name} at {url}: splits {listed}{auth}; Ctrl-C stops", err=True
        )
        if not token_required:
            click.echo(NO_TOKEN_WARNING, err=True)

    server.startup = startup  # type: ignore[method-assign]
    server.run()
