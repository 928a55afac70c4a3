"""The gateway's non-MCP routes: the composed card, the clock, role rules, the call log, health,
and the data-plane / REST proxy to envs. `Gateway` composes one; `POST /mcp` lives in mcp.py."""

from __future__ import annotations

import copy
from typing import Any

import anyio
import httpx

from agentenv_protocol import errors as E
from agentenv_protocol._http import why
from agentenv_protocol.asgi import read_body, respond
from agentenv_protocol.constants import METHOD_GET
from agentenv_protocol.context import DEFAULT_ROLE, ROLE_HEADER
from agentenv_protocol.gateway.auth import Caller
from agentenv_protocol.gateway.clock import GET_TIME_TOOL, ClockError
from agentenv_protocol.gateway.errors import WILDCARD, GatewayError
from agentenv_protocol.gateway.mcp import McpEndpoint
from agentenv_protocol.gateway.routing import RouteTable
from agentenv_protocol.gateway.triggers.engine import (
    FEATURES,
    TRIGGERS_EXTENSION_URI,
    TriggerEngine,
)
from agentenv_protocol.gateway.triggers.errors import TriggerError
from agentenv_protocol.jsonrpc import error as rpc_error
from agentenv_protocol.jsonrpc import loads, parse_request
from agentenv_protocol.schema import did_you_mean
from agentenv_protocol.types import (
    CLOCK_EXTENSION_URI,
    MCP_PATH,
    MCP_TRANSPORT,
    PROTOCOL_VERSION,
    READY_PATH,
    RPC_PATH,
    WELL_KNOWN_PATH,
)

#: The role verifier steps call with: besides tools, it may read an env's state (`data/get`).
VERIFIER_ROLE = "verifier"

CLOCK_EXTENSION = {
    "uri": CLOCK_EXTENSION_URI,
    "description": "The environment clock: set, read and clear the virtual UTC time agents see via get_time.",
    "params": {
        "endpoint": "/clock",
        "methods": {
            "get_time": {"method": "GET", "endpoint": "/clock/time"},
            "set_time": {
                "method": "PUT",
                "endpoint": "/clock/set-time",
                "request": {
                    "type": "object",
                    "required": ["virtual_time"],
                    "properties": {
                        "virtual_time": {"type": "string", "format": "date-time"},
                        "virtual_seconds_per_real_second": {"type": "number", "minimum": 0},
                    },
                },
            },
            "state": {"method": "GET", "endpoint": "/clock/state"},
            "clear": {"method": "POST", "endpoint": "/clock/clear"},
        },
    },
}


TRIGGERS_EXTENSION = {
    "uri": TRIGGERS_EXTENSION_URI,
    "description": "Triggers: actions the gateway takes on tool calls and on the env clock.",
    "params": {
        "endpoint": "/triggers",
        "features": list(FEATURES),
        "methods": {
            "register": {"method": "POST", "endpoint": "/triggers/register"},
            "remove": {"method": "POST", "endpoint": "/triggers/remove"},
            "clear": {"method": "POST", "endpoint": "/triggers/clear"},
            "state": {"method": "GET", "endpoint": "/triggers/state"},
        },
    },
}


def _base_url(scope: dict) -> str:
    """The URL this request reached the gateway at (its Host header, else the server socket)."""
    for key, value in scope.get("headers") or []:
        if key == b"host":
            return f"{scope.get('scheme', 'http')}://{value.decode('latin-1')}"
    host, port = scope.get("server") or ("127.0.0.1", 80)
    return f"http://{host}:{port}"


class ControlRoutes:
    """Everything but `POST /mcp`, over the gateway's route table and MCP endpoint. `http` (the
    client for health probes and the proxy) is set while the gateway serves."""

    def __init__(
        self,
        *,
        name: str,
        table: RouteTable,
        mcp: McpEndpoint,
        max_request_bytes: int,
        call_timeout: float,
    ) -> None:
        self.name = name
        self.table = table
        self.mcp = mcp
        self.max_request_bytes = max_request_bytes
        self.call_timeout = call_timeout
        self.http: httpx.AsyncClient | None = None
        self.triggers: TriggerEngine | None = None

    async def handle(
        self, scope: dict, receive: Any, send: Any, caller: Caller, path: str, method: str
    ) -> None:
        if path == WELL_KNOWN_PATH and method == "GET":
            await respond(send, 200, self.card(caller.role, caller.envs))
        elif path == READY_PATH and method == "GET":
            await respond(send, 200, await self._health())
        elif path == RPC_PATH or path.startswith("/svc/"):
            if not caller.admin and caller.role == VERIFIER_ROLE and method == "POST":
                await self._verifier_read(scope, receive, send, caller, path)
            elif (
                not caller.admin
            ):  # the data plane and env REST routes are the harness's, not an agent's
                await respond(send, 403, {"error": f"{path} needs the gateway's admin token"})
            elif path == RPC_PATH and method == "POST":
                await self._data_plane(scope, receive, send, caller)
            elif path == RPC_PATH:
                await respond(send, 405, {"error": f"{method} {RPC_PATH}: POST a JSON-RPC request"})
            else:
                await self._proxy(scope, receive, send, caller, path)
        elif path.startswith("/clock/"):
            await self._clock_route(scope, receive, send, caller, path, method)
        elif path.startswith("/triggers/"):
            await self._trigger_route(scope, receive, send, caller, path, method)
        elif path in ("/tools/enable", "/tools/disable") and method == "POST":
            if not caller.admin:
                await respond(send, 403, {"error": f"{path} needs the gateway's admin token"})
                return
            body = await self._json_body(receive, send)
            if body is None:
                return
            role, tools = body.get("role"), body.get("tools")
            if not isinstance(role, str) or not role:
                await respond(send, 400, {"error": "'role' must be a non-empty string (or '*')"})
            elif tools != WILDCARD and not (
                isinstance(tools, list) and all(isinstance(t, str) for t in tools)
            ):
                await respond(send, 400, {"error": "'tools' must be a list of tool names or '*'"})
            else:
                try:
                    roles = self.mcp.set_tools(role, tools, enabled=path.endswith("enable"))
                    await respond(send, 200, {"ok": True, "roles": roles})
                except GatewayError as e:
                    await respond(send, 400, {"error": str(e)})
        elif path == "/trajectory" and method == "GET":
            if not caller.admin:
                await respond(send, 403, {"error": "/trajectory needs the gateway's admin token"})
                return
            await respond(send, 200, {"calls": self.mcp.trajectory.records})
        else:
            await respond(send, 404, {"error": f"no route {method} {path}"})

    async def _json_body(self, receive: Any, send: Any) -> dict | None:
        raw = await read_body(receive, self.max_request_bytes)
        if raw is None:
            await respond(
                send, 413, {"error": f"request body exceeds {self.max_request_bytes} bytes"}
            )
            return None
        try:
            body = loads(raw) if raw else {}
        except ValueError as e:
            await respond(send, 400, {"ok": False, "error": f"invalid JSON body: {e}"})
            return None
        if not isinstance(body, dict):
            await respond(send, 400, {"ok": False, "error": "the body must be a JSON object"})
            return None
        return body

    async def clock_time(self, send: Any) -> None:
        """`GET /clock/time`: the virtual time, or 404 while the clock is not armed."""
        try:
            await respond(send, 200, self.mcp.clock.read())
        except ClockError as e:
            await respond(send, e.status, {"ok": False, "error": str(e)})

    async def _clock_route(
        self, scope: dict, receive: Any, send: Any, caller: Caller, path: str, method: str
    ) -> None:
        try:
            if path == "/clock/time" and method == "GET":
                await self.clock_time(send)
                return
            if path == "/clock/state" and method == "GET":
                state = self.mcp.clock.state()
                if state.get("armed"):
                    state["env_get_time_url"] = f"{_base_url(scope)}/clock/time"
                await respond(send, 200, state)
                return
            if path not in ("/clock/set-time", "/clock/clear"):
                await respond(send, 404, {"ok": False, "error": f"no clock route {method} {path}"})
                return
            if not caller.admin:
                await respond(
                    send, 403, {"ok": False, "error": f"{path} needs the gateway's admin token"}
                )
                return
            if path == "/clock/clear" and method == "POST":
                await respond(send, 200, self.mcp.clock.clear())
            elif path == "/clock/set-time" and method == "PUT":
                body = await self._json_body(receive, send)
                if body is None:
                    return
                if GET_TIME_TOOL["name"] in self.table.routes:
                    owner = self.table.routes[GET_TIME_TOOL["name"]].env
                    raise ClockError(f"'get_time' is already served by environment {owner!r}", 409)
                state = self.mcp.clock.set_time(
                    body.get("virtual_time"), body.get("virtual_seconds_per_real_second")
                )
                await respond(send, 200, state)
            else:
                await respond(
                    send, 405, {"ok": False, "error": f"{method} is not allowed on {path}"}
                )
        except ClockError as e:
            await respond(send, e.status, {"ok": False, "error": str(e)})

    async def _trigger_route(
        self, scope: dict, receive: Any, send: Any, caller: Caller, path: str, method: str
    ) -> None:
        """`POST /triggers/register|remove|clear`, `GET /triggers/state` (admin only)."""
        engine = self.triggers
        if engine is None:
            await respond(send, 404, {"ok": False, "error": "this gateway serves no triggers"})
            return
        if not caller.admin:
            await respond(
                send, 403, {"ok": False, "error": f"{path} needs the gateway's admin token"}
            )
            return
        routes = {
            ("/triggers/state", "GET"): lambda body: engine.state(),
            ("/triggers/register", "POST"): engine.register,
            ("/triggers/remove", "POST"): lambda body: engine.remove(body.get("ids")),
            ("/triggers/clear", "POST"): lambda body: engine.clear(),
        }
        handler = routes.get((path, method))
        if handler is None:
            known = sorted({p for p, _ in routes})
            await respond(
                send,
                404 if path not in known else 405,
                {
                    "ok": False,
                    "error": f"no trigger route {method} {path} (known: {', '.join(known)})",
                },
            )
            return
        body: dict | None = {}
        if method == "POST":
            body = await self._json_body(receive, send)
            if body is None:
                return
        engine.bind(_base_url(scope))
        try:
            answer = await anyio.to_thread.run_sync(handler, body)
        except TriggerError as e:
            await respond(send, 400, {"ok": False, "error": str(e)})
            return
        await respond(send, 200, answer)

    def card(self, role: str = DEFAULT_ROLE, envs: frozenset[str] | None = None) -> dict:
        """The composed card: the gateway's own, each env's nested under `children_environments`
        (only the envs in `envs` when the caller's token is scoped)."""
        children = [
            self._child_card(env, card)
            for env, card in self.table.cards.items()
            if envs is None or env in envs
        ]
        operations = (
            (self.table.cards[next(iter(self.table.cards))].get("capabilities") or {}).get(
                "operations"
            )
            if len(self.table.envs) == 1 and self.table.cards
            else []
        )
        return {
            "name": self.name,
            "protocolVersion": PROTOCOL_VERSION,
            "url": RPC_PATH,
            "preferredTransport": "JSONRPC",
            "additionalInterfaces": [{"url": MCP_PATH, "transport": MCP_TRANSPORT}],
            "capabilities": {
                "extensions": [CLOCK_EXTENSION, TRIGGERS_EXTENSION],
                "tools": [
                    {k: t[k] for k in ("name", "description", "inputSchema") if k in t}
                    for t in self.mcp.visible_tools(role, envs)
                ],
                "operations": operations or [],
            },
            "children_environments": children,
        }

    @staticmethod
    def _child_card(env: str, card: dict) -> dict:
        card = copy.deepcopy(card)

        def rooted(path: Any) -> Any:
            return f"/svc/{env}{path}" if isinstance(path, str) and path.startswith("/") else path

        card["url"] = rooted(card.get("url") or RPC_PATH)
        card["additionalInterfaces"] = []
        card["children_environments"] = None
        for ext in (card.get("capabilities") or {}).get("extensions") or []:
            params = ext.get("params") if isinstance(ext, dict) else None
            if not isinstance(params, dict):
                continue
            if "endpoint" in params:
                params["endpoint"] = rooted(params["endpoint"])
            for spec in (params.get("methods") or {}).values():
                if isinstance(spec, dict) and "endpoint" in spec:
                    spec["endpoint"] = rooted(spec["endpoint"])
        return card

    async def _health(self) -> dict:
        status: dict[str, str] = {}

        async def probe(env: str, url: str) -> None:
            try:
                response = await self._client().get(url + WELL_KNOWN_PATH, timeout=2.0)
                status[env] = (
                    "up" if response.status_code == 200 else f"HTTP {response.status_code}"
                )
            except httpx.HTTPError as e:
                status[env] = f"down ({type(e).__name__})"

        async with anyio.create_task_group() as tg:
            for env, url in self.table.envs.items():
                tg.start_soon(probe, env, url)
        ready = all(v == "up" for v in status.values())
        return {
            "status": "ready" if ready else "degraded",
            "envs": status,
            "tools": len(self.table.routes),
        }

    async def _data_plane(self, scope: dict, receive: Any, send: Any, caller: Caller) -> None:
        if len(self.table.envs) != 1:
            raw = await read_body(receive, self.max_request_bytes)
            req, error = parse_request(raw or b"")
            rid = req.get("id") if req else None
            await respond(
                send,
                200,
                error
                or rpc_error(
                    rid,
                    E.SERVER_ERROR,
                    f"the gateway fronts {len(self.table.envs)} environments; call "
                    f"/svc/<env>{RPC_PATH} for one of: {', '.join(self.table.envs)}",
                    {"code": "ambiguous_environment"},
                ),
            )
            return
        env = next(iter(self.table.envs))
        await self._proxy(scope, receive, send, caller, f"/svc/{env}{RPC_PATH}")

    async def _verifier_read(
        self, scope: dict, receive: Any, send: Any, caller: Caller, path: str
    ) -> None:
        """The verifier role reads an env's state: `data/get` on `/svc/<env>/rpc` only (never
        reset or add, never the env's other routes)."""
        body = await read_body(receive, self.max_request_bytes, scope)
        req, _ = parse_request(body or b"")
        _, _, rest = path.partition("/svc/")
        env, _, tail = rest.partition("/")
        if (
            body is None
            or req is None
            or req.get("method") != METHOD_GET
            or "/" + tail != RPC_PATH
            or not caller.reaches(env)
        ):
            await respond(
                send,
                403,
                {"error": f"the verifier role may only POST {METHOD_GET} to /svc/<env>{RPC_PATH}"},
            )
            return
        await self._proxy(scope, receive, send, caller, path, body=body)

    async def _proxy(
        self,
        scope: dict,
        receive: Any,
        send: Any,
        caller: Caller,
        path: str,
        *,
        body: bytes | None = None,
    ) -> None:
        _, _, rest = path.partition("/svc/")
        env, _, tail = rest.partition("/")
        base = self.table.envs.get(env)
        if base is None:
            await respond(
                send,
                404,
                {"error": f"unknown environment {env!r}{did_you_mean(env, self.table.envs)}"},
            )
            return
        if body is None:
            body = await read_body(receive, self.max_request_bytes, scope)
        if body is None:
            await respond(
                send, 413, {"error": f"request body exceeds {self.max_request_bytes} bytes"}
            )
            return
        url = f"{base}/{tail}"
        if scope.get("query_string"):
            url += "?" + scope["query_string"].decode("latin-1")
        headers = {
            k.decode("latin-1"): v.decode("latin-1")
            for k, v in scope["headers"]
            if k in (b"content-type", b"accept")
        }
        headers[ROLE_HEADER] = caller.role
        headers.update(self.table.headers_for(env))
        try:
            response = await self._client().request(
                scope["method"], url, content=body, headers=headers
            )
        except httpx.TimeoutException:
            await respond(
                send,
                504,
                {"error": f"environment {env!r} did not answer within {self.call_timeout:g}s"},
            )
            return
        except httpx.HTTPError as e:
            await respond(
                send, 502, {"error": f"environment {env!r} is not reachable at {base}: {why(e)}"}
            )
            return
        ctype = response.headers.get("content-type", "application/json").encode()
        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": [
                    (b"content-type", ctype),
                    (b"content-length", str(len(response.content)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": response.content})

    def _client(self) -> httpx.AsyncClient:
        if self.http is None:
            raise GatewayError("the gateway is not serving (no HTTP client yet)")
        return self.http
