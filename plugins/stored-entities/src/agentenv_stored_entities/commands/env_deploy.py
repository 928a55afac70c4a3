"""`agent-env env deploy --id ENV` and `env get-instance --id TI`: bring a stored env up in a
sandbox through the run service (a one-step `deploy_env` task), print where it answers, hold it
until Ctrl-C, then tear it down."""

from __future__ import annotations

from typing import Any

import anyio
import click

from agent_env.cli.toolkit import with_session
from agentenv_stored_entities.commands.deploy_hold import deploy_and_hold
from agentenv_stored_entities.commands.group import echo_json


@click.command("deploy")
@click.option("--id", "ref", required=True, help="The stored env id (or its name).")
@click.option("--version", type=click.IntRange(min=1), help="Env version (default latest).")
@click.option(
    "--sandbox", "provider", metavar="NAME", help="Sandbox provider (or chain a,b) to deploy on."
)
@click.option(
    "--ttl-seconds",
    type=click.IntRange(60, 1_209_600),
    help="Sandbox lifetime where the provider enforces one.",
)
@click.option("--cpu", type=click.FloatRange(min=0, min_open=True), help="vCPUs for the env.")
@click.option("--memory-mb", type=click.IntRange(min=1), help="Memory for the env, in MB.")
@click.option(
    "--disk-size-gb", type=click.FloatRange(min=0, min_open=True), help="Disk for the env, in GB."
)
@click.option("--json", "as_json", is_flag=True, help="Print where the env answers as JSON.")
def deploy(
    ref: str, version: int | None, provider: str | None, as_json: bool, **limits: Any
) -> int:
    """Deploy a stored env into a sandbox, print its URL and tools, and keep it up until
    Ctrl-C, which tears it down. Exit codes: 0 deployed (and torn down), 1 it did not come up."""
    # no gateway stands in front of an env deployed on its own: the user who asked for it
    # calls it directly, so it takes calls without the gateway's per-env secret
    step = {"id": "env", "type": "deploy_env", "allow_direct_calls": True}
    step.update({k: v for k, v in limits.items() if v is not None})
    return deploy_and_hold("env", ref, version, provider, step, as_json, _env_up)


async def _env_up(session: Any, record: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    env = record["bundle"]["provenance"]
    info = await instance_envs(session.stores.documents, record["id"])
    up = {**describe(env["env"], env["version"], record["id"], info), "run_id": record["run_id"]}
    return up, [
        f"env {up['env']} v{up['version']} up on {up['provider']}",
        f"url: {up['url']}",
        f"mcp: {up['mcp_url']}",
        "token: none (the env's own server; a run's gateway adds role tokens)",
        f"tools: {', '.join(up['tools']) or 'none'}",
        f"instance: {up['instance']}",
    ]


async def instance_envs(documents: Any, instance_id: str) -> dict[str, Any]:
    """The envs task instance `instance_id` deployed (its journaled `envs` state), by name."""
    from agent_env.cli.toolkit import Journal, replay

    _, entries = await Journal.open(documents, instance_id)
    return dict(replay(entries).get("envs") or {})


def describe(env_id: str, version: int, instance: str, envs: dict[str, Any]) -> dict[str, Any]:
    """Where the deployed env answers (its own server: no token), from the instance's state."""
    (entry,) = envs.values()
    url = str(entry["url"]).rstrip("/")
    return {
        "env": env_id,
        "version": version,
        "instance": instance,
        "provider": entry.get("provider"),
        "sandbox": entry.get("sandbox"),
        "url": url,
        "mcp_url": f"{url}/mcp",
        "token": None,
        "tools": list(entry.get("tools") or []),
    }


@click.command("get-instance")
@click.option("--id", "ident", required=True, help="A task instance id (ti-...).")
def get_instance(ident: str) -> None:
    """Print the envs a task instance deployed (`env deploy` prints its instance id) as JSON:
    each one's id, version, provider, sandbox, URL and tools."""
    from agent_env.cli.toolkit import load_record

    async def go(session: Any) -> Any:
        record = await load_record(session.stores.documents, ident)
        return {
            "instance": record["id"],
            "run_id": record.get("run_id"),
            "status": record.get("status"),
            "envs": await instance_envs(session.stores.documents, ident),
        }

    echo_json(anyio.run(with_session, go))
