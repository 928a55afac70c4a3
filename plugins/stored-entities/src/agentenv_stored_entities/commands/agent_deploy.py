"""`agent-env a2a-agent deploy --id AGENT` and `a2a-agent get-instance --id TI` (the existing
CLI's names): bring a stored agent up through the run service (a one-step `deploy_agent` task,
as `env deploy` does for an env), print where it answers A2A, hold it until Ctrl-C, then tear
it down."""

from __future__ import annotations

from typing import Any

import anyio
import click

from agent_env.cli.toolkit import with_session
from agentenv_stored_entities.commands.deploy_hold import deploy_and_hold
from agentenv_stored_entities.commands.group import echo_json


def _env_vars(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {value!r}", param_hint="--env-var")
        out[key] = val
    return out


@click.command("deploy")
@click.option("--id", "ref", required=True, help="The stored agent id (or its name).")
@click.option("--version", type=click.IntRange(min=1), help="Agent version (default latest).")
@click.option(
    "--env-var",
    "env_vars",
    multiple=True,
    metavar="KEY=VALUE",
    help="An environment variable for the agent's process (repeatable).",
)
@click.option(
    "--sandbox", "provider", metavar="NAME", help="Sandbox provider (or chain a,b) to deploy on."
)
@click.option(
    "--ttl-seconds",
    type=click.IntRange(60, 1_209_600),
    help="Sandbox lifetime where the provider enforces one.",
)
@click.option("--json", "as_json", is_flag=True, help="Print where the agent answers as JSON.")
def deploy(
    ref: str,
    version: int | None,
    env_vars: tuple[str, ...],
    provider: str | None,
    ttl_seconds: int | None,
    as_json: bool,
) -> int:
    """Deploy a stored agent into a sandbox, print its A2A URL, and keep it up until Ctrl-C,
    which tears it down. The model endpoint is the run's ([model] or LITELLM_BASE_URL).
    Exit codes: 0 deployed (and torn down), 1 it did not come up."""
    # an agent on its own: no envs, so no gateway
    step: dict[str, Any] = {"id": "agent", "type": "deploy_agent", "env_ids": []}
    if env_vars:
        step["env_vars"] = _env_vars(env_vars)
    if ttl_seconds is not None:
        step["ttl_seconds"] = ttl_seconds
    return deploy_and_hold("agent", ref, version, provider, step, as_json, _agent_up)


async def _agent_up(session: Any, record: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    agent = record["bundle"]["provenance"]
    agents = await instance_agents(session.stores.documents, record["id"])
    (entry,) = agents.values()
    up = {
        "agent": agent["agent"],
        "version": agent["version"],
        "instance": record["id"],
        "run_id": record["run_id"],
        "type": entry.get("type"),
        "provider": entry.get("provider"),
        "sandbox": entry.get("sandbox"),
        "url": entry.get("url"),
        "card_url": f"{str(entry.get('url')).rstrip('/')}/.well-known/agent-card.json",
    }
    return up, [
        f"agent {up['agent']} v{up['version']} up on {up['provider']}",
        f"url: {up['url']}",
        f"card: {up['card_url']}",
        f"instance: {up['instance']}",
    ]


async def instance_agents(documents: Any, instance_id: str) -> dict[str, Any]:
    """The agents task instance `instance_id` deployed (its journaled `agents` state)."""
    from agent_env.cli.toolkit import Journal, replay

    _, entries = await Journal.open(documents, instance_id)
    return dict(replay(entries).get("agents") or {})


@click.command("get-instance")
@click.option("--id", "ident", required=True, help="A task instance id (ti-...).")
def get_instance(ident: str) -> None:
    """Print the agents a task instance deployed (`a2a-agent deploy` prints its instance id)
    as JSON: each one's type, provider, sandbox and A2A URL."""
    from agent_env.cli.toolkit import load_record

    async def go(session: Any) -> Any:
        record = await load_record(session.stores.documents, ident)
        return {
            "instance": record["id"],
            "run_id": record.get("run_id"),
            "status": record.get("status"),
            "agents": await instance_agents(session.stores.documents, ident),
        }

    echo_json(anyio.run(with_session, go))
