"""Services the SDK adds to every served agent beside its extension operations (staging's
object store, the peer-agents MCP server): routes under a path prefix the service owns, card
entries, and a lifespan.

A provider module defines `a2a_service(application) -> Service | None` (None: not for this
agent, or turned off). A provider module that is not installed is skipped; one that fails to
import is an error. An agent operation under a service's prefix fails `create_app` with a
message naming both.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from agentenv_protocol.a2a_agent.framework import A2AAgentApplication

SERVICE_PROVIDERS: tuple[str, ...] = (
    "agentenv_protocol.a2a_agent.staging",
    "agentenv_protocol.a2a_agent.peer_agents",
)


@attrs.frozen(kw_only=True)
class Service:
    """What one service adds to an agent's app."""

    name: str
    routes: tuple[Any, ...] = ()
    card_entries: tuple[dict[str, Any], ...] = ()
    prefix: str | None = None
    lifespan: Callable[[Any], contextlib.AbstractAsyncContextManager] | None = None


def services_for(application: A2AAgentApplication) -> list[Service]:
    """The services `application` gets; ValueError when one of its operations sits under a
    service's prefix."""
    found = []
    for module_name in SERVICE_PROVIDERS:
        if importlib.util.find_spec(module_name) is None:
            continue
        provider = getattr(importlib.import_module(module_name), "a2a_service", None)
        service = provider(application) if provider is not None else None
        if service is None:
            continue
        if service.prefix is not None:
            for op in application.registry.operations():
                path = op.definition.path
                if path == service.prefix or path.startswith(service.prefix.rstrip("/") + "/"):
                    raise ValueError(
                        f"{application.registry.agent_name}: {op.uri} {op.definition.name!r} "
                        f"at {path} conflicts with the {service.name} routes under "
                        f"{service.prefix}"
                    )
        found.append(service)
    return found
