"""The route table's rules: valid env names, and exposed tool name -> (env, tool) with clash checks."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from agentenv_protocol.gateway.errors import GatewayError

SEPARATOR = "__"


@attrs.define(slots=True)
class Route:
    """Where an exposed tool goes: the env and the tool's name there, and its descriptor."""

    env: str
    tool: str
    descriptor: dict


def check_env_name(env: str) -> None:
    if (
        not isinstance(env, str)
        or not env
        or SEPARATOR in env
        or "/" in env
        or not env.isprintable()
    ):
        raise GatewayError(
            f"invalid environment name {env!r}: use letters, digits, '-' or a single '_'"
        )


def build_routes(
    envs: Mapping[str, str], found: dict[str, list[dict]], *, namespacing: bool
) -> dict[str, Route]:
    """Exposed tool name -> Route; a name two envs serve raises GatewayError naming both."""
    routes: dict[str, Route] = {}
    owners: dict[str, str] = {}
    clashes = []
    for env in envs:
        for tool in found.get(env, []):
            exposed = f"{env}{SEPARATOR}{tool['name']}" if namespacing else tool["name"]
            if exposed in owners:
                clashes.append(
                    f"tool {tool['name']!r} is served by both {owners[exposed]!r} and {env!r}"
                )
                continue
            owners[exposed] = env
            descriptor = {
                k: v
                for k, v in tool.items()
                if k
                in (
                    "name",
                    "title",
                    "description",
                    "inputSchema",
                    "annotations",
                    "outputSchema",
                    "_meta",
                )
            }
            descriptor["name"] = exposed
            routes[exposed] = Route(env, tool["name"], descriptor)
    if clashes:
        raise GatewayError(
            "; ".join(clashes) + " (rename one, or turn on namespacing so tools are "
            "exposed as '<env>__<tool>')"
        )
    return routes
