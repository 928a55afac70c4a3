"""The MCP gateway: one authenticated MCP endpoint in front of N environment servers.

`Gateway` is the ASGI app. It authenticates every request (auth.py) and composes the route
table (routing.py), the role rules (roles.py), `POST /mcp` with forwarding and the call log
(mcp.py), and the other routes (control.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx

from agentenv_protocol import _http
from agentenv_protocol.asgi import respond
from agentenv_protocol.context import DEFAULT_ROLE
from agentenv_protocol.gateway.auth import Auth, Caller
from agentenv_protocol.gateway.clock import EnvClock
from agentenv_protocol.gateway.control import ControlRoutes
from agentenv_protocol.gateway.errors import GatewayError
from agentenv_protocol.gateway.limits import MAX_CONNECTIONS_PER_ROLE, RoleConnections
from agentenv_protocol.gateway.mcp import Answer, Forwarder, McpEndpoint, json_answer
from agentenv_protocol.gateway.roles import RoleRules
from agentenv_protocol.gateway.routing import Route, RouteTable
from agentenv_protocol.gateway.trajectory import Trajectory
from agentenv_protocol.gateway.triggers.engine import TriggerEngine
from agentenv_protocol.types import MCP_PATH

__all__ = ["Gateway", "GatewayError"]


class Gateway:
    """ASGI app fronting `envs` (name -> base URL). Every route needs `Authorization: Bearer <token>`:
    `tokens` maps agent tokens to the one role each may act as; `admin_token` (generated when not
    given) may act as any role (`AgentEnv-Role` header) and use the control routes.
    `connect_timeout` waits only for an env host that does not answer (a refused connection
    fails at once); 3 s expired under a 4,096-call burst on a loaded 2-core machine."""

    def __init__(
        self,
        envs: Mapping[str, str],
        *,
        name: str = "gateway",
        tokens: Mapping[str, str] | None = None,
        admin_token: str | None = None,
        namespacing: bool = False,
        trajectory: str | Path | Trajectory | None = None,
        secrets: Iterable[str] = (),
        call_timeout: float = 120.0,
        connect_timeout: float = 10.0,
        max_request_bytes: int = 8 * 1024 * 1024,
        clock: EnvClock | None = None,
        startup_timeout: float = 30.0,
        max_connections_per_role: int = MAX_CONNECTIONS_PER_ROLE,
    ) -> None:
        self.name = name
        self.table = RouteTable(envs, namespacing=namespacing, client_name=name)
        self.namespacing = namespacing
        self.call_timeout = call_timeout
        self.startup_timeout = startup_timeout
        self.connect_timeout = connect_timeout
        self.max_request_bytes = max_request_bytes
        self.clock = clock or EnvClock()
        self.trajectory = (
            trajectory
            if isinstance(trajectory, Trajectory)
            else Trajectory(trajectory, secrets=secrets)
        )
        self.auth = Auth(admin_token, dict(tokens or {}), self.trajectory.add_secret)
        for secret in [self.admin_token, *self.tokens, *secrets]:
            self.trajectory.add_secret(secret)
        self.roles = RoleRules()
        self.connections = RoleConnections(max_connections_per_role)
        self.forwarder = Forwarder(
            self.table,
            client_name=name,
            call_timeout=call_timeout,
            connect_timeout=connect_timeout,
        )
        self.mcp = McpEndpoint(
            name=name,
            table=self.table,
            roles=self.roles,
            clock=self.clock,
            trajectory=self.trajectory,
            forwarder=self.forwarder,
            max_request_bytes=max_request_bytes,
        )
        self.control = ControlRoutes(
            name=name,
            table=self.table,
            mcp=self.mcp,
            max_request_bytes=max_request_bytes,
            call_timeout=call_timeout,
        )
        self.triggers = TriggerEngine(
            self.clock,
            known_tools=lambda: [*self.table.routes, "get_time"] if self.table.envs else None,
            admin_token=self.admin_token,
        )
        self.mcp.on_call = self.triggers.on_call
        self.control.triggers = self.triggers
        self.discovered = False
        self.startup_error: BaseException | None = None
        self._lock: anyio.Lock | None = None

    # --- setup ------------------------------------------------------------------------------
    def issue_token(self, role: str, envs: Iterable[str] | None = None) -> str:
        """A new random bearer token bound to `role`; with `envs` (env names) the token sees
        and calls only those envs' tools (plus the gateway's own, such as `get_time`)."""
        return self.auth.issue_token(role, envs)

    @property
    def admin_token(self) -> str:
        return self.auth.admin_token

    @property
    def tokens(self) -> dict[str, str]:
        return self.auth.tokens

    # --- the envs ----------------------------------------------------------------------------
    @property
    def envs(self) -> dict[str, str]:
        return self.table.envs

    @property
    def routes(self) -> dict[str, Route]:
        return self.table.routes

    @property
    def cards(self) -> dict[str, dict]:
        return self.table.cards

    @property
    def env_tools(self) -> dict[str, list[dict]]:
        return self.table.env_tools

    def _client(self) -> httpx.AsyncClient:
        limits = httpx.Limits(
            max_connections=512, max_keepalive_connections=256, keepalive_expiry=30
        )
        return _http.client(self.call_timeout, connect=self.connect_timeout, limits=limits)

    async def discover(self) -> None:
        """Read every env's card and tools, retrying unreachable envs for `startup_timeout` seconds;
        raise GatewayError naming the env that never answered, or both envs of a tool-name clash."""
        async with self._client() as http:
            await self.table.discover(http, self.startup_timeout)
        self.discovered = True

    async def add_env(self, name: str, url: str, secret: str | None = None) -> list[str]:
        """Front one more env while serving; returns the names its tools are exposed under.
        With `secret` (what the env server checks, `agentenv_protocol.gateway_only`) every
        request forwarded to it carries the secret. A name clash (or an unreachable env)
        raises GatewayError and changes nothing."""
        async with self._client() as http:
            return await self.table.add(http, name, url, secret)

    def remove_env(self, name: str) -> None:
        """Stop fronting `name`: its tools leave `tools/list` at once."""
        self.table.remove(name)
        self.forwarder.forget(name)

    # --- roles ------------------------------------------------------------------------------
    def set_tools(self, role: str, tools: list[str] | str, *, enabled: bool) -> dict:
        """Enable or disable `tools` (or `*`) for `role` (or `*`); returns the rules per role."""
        return self.mcp.set_tools(role, tools, enabled=enabled)

    def role_rules(self) -> dict:
        return self.roles.describe()

    @property
    def rules(self) -> dict[str, dict[str, bool]]:
        return self.roles.rules

    def is_disabled(self, role: str, tool: str) -> bool:
        return self.mcp.is_disabled(role, tool)

    def visible_tools(self, role: str, envs: Iterable[str] | None = None) -> list[dict]:
        return self.mcp.visible_tools(role, None if envs is None else frozenset(envs))

    def card(self, role: str = DEFAULT_ROLE) -> dict:
        """The composed card: the gateway's own, each env's nested under `children_environments`."""
        return self.control.card(role)

    # --- ASGI -------------------------------------------------------------------------------
    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        await self._ensure_started()
        if scope["path"] == "/clock/time" and scope["method"] == "GET":
            await self.control.clock_time(send)  # public: backing servers read the env clock
            return
        caller = self.authenticate(scope["headers"])
        if not isinstance(caller, Caller):
            await respond(send, *caller)
            return
        admitted = self.admit(caller)
        if not isinstance(admitted, str):
            await respond(send, *admitted)
            return
        try:
            await self._serve(scope, receive, send, caller)
        finally:
            self.release(admitted)

    # --- what both servers share (the ASGI app above, the hot path of hot_path.py) -------
    def authenticate(self, headers: list) -> Caller | Answer:
        """The caller a request's headers authenticate, or the 401/403 that refuses it."""
        caller = self.auth.authenticate(headers)
        if isinstance(caller, Caller):
            return caller
        status, message = caller
        challenge = [(b"www-authenticate", b'Bearer realm="agentenv-gateway"')]
        return json_answer(status, {"error": message}, challenge if status == 401 else [])

    def admit(self, caller: Caller) -> str | Answer:
        """Count the caller's request in flight (from its headers until it is answered): the
        key to `release` it with, or the 503 that refuses it when its role is at its limit."""
        # the admin token (the runner, the verifiers it runs) is counted apart from the roles
        key = f"admin:{caller.role}" if caller.admin else f"role:{caller.role}"
        if self.connections.take(key):
            return key
        limit = self.connections.limit
        return json_answer(
            503,
            {"error": f"role {caller.role!r} already has {limit} requests in flight"},
            [(b"retry-after", b"1"), (b"connection", b"close")],
        )

    def release(self, key: str) -> None:
        """A request `admit` counted is done (answered, or its client went away)."""
        self.connections.give_back(key)

    async def answer_mcp_post(self, caller: Caller, key: str, headers: list, body: bytes) -> Answer:
        """`POST /mcp` for the hot path, admitted under `key` (released here): the same answer
        as the ASGI route."""
        try:
            return await self.mcp.answer(body, headers, caller)
        finally:
            self.release(key)

    async def answer_in_process(self, token: str, body: bytes) -> Answer:
        """`POST /mcp` with `body` from a caller on this gateway's own event loop holding
        `token` (the OpenEnv episode's agent of a pooled instance): the same auth, role limit,
        answer and call log as over HTTP, without the socket and the HTTP codec."""
        await self._ensure_started()
        caller = self.authenticate([(b"authorization", b"Bearer " + token.encode("latin-1"))])
        if not isinstance(caller, Caller):
            return caller
        admitted = self.admit(caller)
        if not isinstance(admitted, str):
            return admitted
        return await self.answer_mcp_post(caller, admitted, [], body)

    def http_protocol(self, base: type) -> type:
        """uvicorn's protocol class `base` with the hot path for `POST /mcp` (hot_path.py)."""
        from agentenv_protocol.gateway.hot_path import hot_path_protocol

        return hot_path_protocol(base, self)

    async def _serve(self, scope: dict, receive: Any, send: Any, caller: Caller) -> None:
        path, method = scope["path"], scope["method"]
        if path == MCP_PATH or path == MCP_PATH + "/":
            if method == "POST":
                await self.mcp.post(scope, receive, send, caller)
            else:
                await respond(
                    send,
                    405,
                    {"error": f"{method} {MCP_PATH} is not supported; POST JSON-RPC"},
                    [(b"allow", b"POST")],
                )
            return
        await self.control.handle(scope, receive, send, caller, path, method)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self._ensure_started()
                except BaseException as e:
                    self.startup_error = e
                    await send({"type": "lifespan.startup.failed", "message": str(e)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _ensure_started(self) -> None:
        if self.control.http is not None:
            return
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self.control.http is not None:
                return
            if not self.discovered:
                await self.discover()
            self.control.http = self._client()

    async def aclose(self) -> None:
        self.triggers.stop()
        await self.forwarder.aclose()
        if self.control.http is not None:
            await self.control.http.aclose()
            self.control.http = None
        self.trajectory.close()
