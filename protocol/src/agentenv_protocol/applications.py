"""The existing SDK's composition style: serve any object's marks under a card on an app the
author built (FastMCP or Starlette), without the `AgentEnvEnvironment` base class."""

from __future__ import annotations

import os
from typing import Any

from agentenv_protocol.mounting import mount
from agentenv_protocol.server import EnvironmentApp
from agentenv_protocol.types import DEFAULT_HOST, DEFAULT_PORT, RPC_PATH, WELL_KNOWN_PATH


class AgentEnvApplication:
    """The existing SDK's composition style: `AgentEnvFastMCPApplication(environment_card=card,
    handler=handler).add_routes_to_app(app)` serves any object's marks under `card`, without
    the base class."""

    def __init__(self, environment_card: Any, handler: Any) -> None:
        self.handler = handler
        self.served = EnvironmentApp(handler, card=environment_card)

    @property
    def environment_card(self) -> Any:
        return self.served.card

    def add_routes_to_app(
        self, app: Any, *, rpc_url: str = RPC_PATH, card_url: str = WELL_KNOWN_PATH
    ) -> None:
        if (rpc_url, card_url) != (RPC_PATH, WELL_KNOWN_PATH):
            raise ValueError(
                f"add_routes_to_app: the data plane is served at {RPC_PATH} and the card at "
                f"{WELL_KNOWN_PATH}; other paths are not supported"
            )
        self._add(app)

    def _add(self, app: Any) -> None:
        raise NotImplementedError


class AgentEnvFastMCPApplication(AgentEnvApplication):
    """Routes and tools onto a FastMCP app (see `mount`)."""

    def _add(self, app: Any) -> None:
        mount(self.served, app)


class AgentEnvStarletteApplication(AgentEnvApplication):
    """Routes onto a Starlette (or FastAPI) app, which has no MCP tools: a handler with `@tool`
    methods is refused."""

    def __init__(self, environment_card: Any, handler: Any) -> None:
        super().__init__(environment_card, handler)
        if self.served.tools:
            raise ValueError(
                f"@tool methods ({', '.join(self.served.tools)}) need a FastMCP app; "
                "use AgentEnvFastMCPApplication"
            )

    def _add(self, app: Any) -> None:
        app.router.routes.extend(self.served.routes())
        from agentenv_protocol.gateway_only import GatewayOnly, env_secret

        secret = env_secret()
        if secret and callable(getattr(app, "add_middleware", None)):
            app.add_middleware(GatewayOnly, secret=secret)


def create_fastmcp_app(handler: Any, *, card: Any, **fastmcp_kwargs: Any) -> Any:
    """A FastMCP app (mcp 1.x) for the deploy contract (`MCP_HOST`/`MCP_PORT`, DNS-rebinding
    protection off) with `handler` mounted under `card`; returned un-served."""
    try:
        from mcp.server.fastmcp import FastMCP
    except ImportError as e:
        raise ImportError(
            "create_fastmcp_app needs mcp's FastMCP (mcp>=1.25,<2); this SDK's own "
            "AgentEnvEnvironment.serve() needs no FastMCP"
        ) from e
    app = FastMCP(card.name, **fastmcp_kwargs)
    app.settings.host = os.environ.get("MCP_HOST", DEFAULT_HOST)
    app.settings.port = int(os.environ.get("MCP_PORT", DEFAULT_PORT))
    if app.settings.transport_security is not None:  # None: FastMCP checks no Host header
        app.settings.transport_security.enable_dns_rebinding_protection = False
    AgentEnvFastMCPApplication(card, handler).add_routes_to_app(app)
    return app
