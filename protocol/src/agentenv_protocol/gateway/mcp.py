"""The gateway's `POST /mcp`: parse, check the caller's role, answer the MCP methods (the
handshake, ping and tools methods of `mcp_methods`, which the env server's `/mcp` answers with
too, plus the per-request revision's `server/discover`), forward `tools/call` to the owning env at
the JSON-RPC level over a keep-alive pool (fastpost), and log each call to the trajectory. Plain
ASGI, no mcp package."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from agentenv_protocol import errors as E
from agentenv_protocol import jsonrpc, mcp_methods
from agentenv_protocol.asgi import read_body, respond
from agentenv_protocol.context import ROLE_META_KEY, SESSION_META_KEY
from agentenv_protocol.fastpost import (
    ForwardConnectError,
    ForwardConnectTimeout,
    ForwardError,
    ForwardTimeout,
    PostPool,
)
from agentenv_protocol.gateway.auth import Caller
from agentenv_protocol.gateway.clock import GET_TIME_TOOL, ClockError, EnvClock, iso
from agentenv_protocol.gateway.errors import call_fault, marked_fault
from agentenv_protocol.gateway.roles import RoleRules
from agentenv_protocol.gateway.routing import Route, RouteTable
from agentenv_protocol.gateway.trajectory import Trajectory
from agentenv_protocol.jsonrpc import error as rpc_error
from agentenv_protocol.jsonrpc import parse_request
from agentenv_protocol.mcp_http import HANDSHAKE_VERSIONS, MODERN_VERSION, McpHttp, McpHttpError
from agentenv_protocol.schema import did_you_mean
from agentenv_protocol.types import HIDDEN_BY_DEFAULT_META_KEY

GET_TIME = str(GET_TIME_TOOL["name"])
_MODERN = MODERN_VERSION.encode()

#: An HTTP answer as both servers send it: status, JSON body, extra headers.
Answer = tuple[int, bytes, list[tuple[bytes, bytes]]]


#: `json.dumps(value, default=str)`
_encode = jsonrpc.encoder(default=str)


def json_answer(status: int, body: Any, headers: list | None = None) -> Answer:
    return status, _encode(body).encode(), headers or []


def _now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def error_result(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _text(result: dict) -> str:
    return "\n".join(c.get("text", "") for c in result.get("content") or [] if isinstance(c, dict))


class Forwarder:
    """One keep-alive pool and MCP requester per env, made when first needed."""

    def __init__(
        self, table: RouteTable, *, client_name: str, call_timeout: float, connect_timeout: float
    ) -> None:
        self.table = table
        self.client_name = client_name
        self.call_timeout = call_timeout
        self.connect_timeout = connect_timeout
        self._pools: dict[str, PostPool] = {}
        self._mcp: dict[str, McpHttp] = {}

    def _requester(self, env: str) -> McpHttp:
        mcp = self._mcp.get(env)
        if mcp is None:
            pool = PostPool(
                self.table.envs[env],
                connect_timeout=self.connect_timeout,
                timeout=self.call_timeout,
            )
            self._pools[env] = pool
            mcp = self._mcp[env] = McpHttp(
                self.table.mcp_url(env),
                pool=pool,
                client_name=self.client_name,
                headers=self.table.headers_for(env),
            )
        return mcp

    def forget(self, env: str) -> None:
        self._mcp.pop(env, None)
        self._pools.pop(env, None)  # idle connections close when collected

    async def aclose(self) -> None:
        for pool in self._pools.values():
            await pool.aclose()
        self._pools, self._mcp = {}, {}

    async def call(self, route: Route, arguments: dict, caller: Caller) -> tuple[dict, str | None]:
        """The env's tools/call result, an error result, or a JSON-RPC error (`jsonrpc` key),
        with the fault of a failure (`gateway.errors.call_fault`; None: the agent's refusal)."""
        mcp = self._requester(route.env)
        meta = {ROLE_META_KEY: caller.role, SESSION_META_KEY: caller.session}
        url = self.table.envs[route.env]
        try:
            answer = await mcp.request(
                "tools/call", {"name": route.tool, "arguments": arguments}, meta=meta
            )
        except ForwardTimeout:
            return error_result(
                f"environment {route.env!r} did not answer tool {route.tool!r} within "
                f"{self.call_timeout:g}s"
            ), "env"
        except ForwardConnectTimeout as e:
            return error_result(
                f"environment {route.env!r} at {url} did not accept the connection in time ({e})"
            ), "infrastructure"
        except ForwardConnectError as e:
            return error_result(
                f"environment {route.env!r} is not reachable at {url} ({e}); it may have stopped"
            ), "env"
        except ForwardError as e:
            return error_result(
                f"environment {route.env!r} failed while answering tool {route.tool!r}: "
                f"{type(e).__name__}: {e}"
            ), "env"
        except McpHttpError as e:
            return error_result(
                f"environment {route.env!r} gave an invalid answer to tool {route.tool!r}: {e}"
            ), "env"
        if "error" in answer:
            return {"jsonrpc": "2.0", "id": None, "error": answer["error"]}, None
        result = answer.get("result") or {}
        fault = marked_fault(result)
        result.pop("_meta", None)
        result.pop("resultType", None)
        return result, fault


class McpEndpoint:
    """`POST /mcp` over the route table: what each role sees and may call, and the call log."""

    def __init__(
        self,
        *,
        name: str,
        table: RouteTable,
        roles: RoleRules,
        clock: EnvClock,
        trajectory: Trajectory,
        forwarder: Forwarder,
        max_request_bytes: int,
    ) -> None:
        self.name = name
        self.table = table
        self.roles = roles
        self.clock = clock
        self.trajectory = trajectory
        self.forwarder = forwarder
        self.max_request_bytes = max_request_bytes
        #: The tool calls being forwarded now: {role, tool, env, started (epoch seconds)},
        #: so a prompt that runs out of time can tell an env that did not answer (`pending`).
        self.in_flight: dict[int, dict] = {}
        #: called after every tools/call with (role, tool, arguments, answer): the trigger engine
        self.on_call: Callable[[str, str, dict, dict], None] | None = None
        self._methods = self._dispatcher()

    # --- what a role sees ---------------------------------------------------------------------
    def is_disabled(self, role: str, tool: str) -> bool:
        """Whether `role` may not see or call `tool`: a tool the env marks hidden by default
        stays disabled until a rule names it."""
        route = self.table.routes.get(tool)
        meta = route.descriptor.get("_meta") if route is not None else None
        hidden = isinstance(meta, dict) and meta.get(HIDDEN_BY_DEFAULT_META_KEY) is True
        return self.roles.is_disabled(role, tool, hidden)

    def visible_tools(self, role: str, envs: frozenset[str] | None = None) -> list[dict]:
        """The tools `role` sees, only those of `envs` when the caller's token is scoped."""
        routes = self.table.routes
        tools = [
            r.descriptor
            for n, r in routes.items()
            if (envs is None or r.env in envs) and not self.is_disabled(role, n)
        ]
        if self.clock.armed and GET_TIME not in routes and not self.is_disabled(role, GET_TIME):
            tools.append(GET_TIME_TOOL)
        return tools

    def set_tools(self, role: str, tools: list[str] | str, *, enabled: bool) -> dict:
        """Enable or disable `tools` (or `*`) for `role` (or `*`); returns the rules per role."""
        known = [*self.table.routes, GET_TIME]
        return self.roles.set(role, tools, enabled=enabled, known=known)

    # --- POST /mcp ---------------------------------------------------------------------------
    async def post(self, scope: dict, receive: Any, send: Any, caller: Caller) -> None:
        """The ASGI route; `answer` decides what it says (the hot path calls it too)."""
        body = await read_body(receive, self.max_request_bytes, scope)
        status, data, headers = await self.answer(body, scope["headers"], caller)
        await respond(send, status, data, headers)

    async def answer(self, body: bytes | None, headers: list, caller: Caller) -> Answer:
        """The answer to one `POST /mcp` from `caller`, whichever server read it; `body` is
        None when it exceeded `max_request_bytes`."""
        if body is None:
            message = f"request body exceeds {self.max_request_bytes} bytes"
            return json_answer(413, rpc_error(None, E.INVALID_REQUEST, message))
        req, error = parse_request(body)
        if req is None or error is not None:
            return json_answer(400, error)
        if mcp_methods.is_notification(req):
            return 202, b"", []
        rid = req["id"]
        params = req.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        claimed = meta.get(ROLE_META_KEY) if isinstance(meta, dict) else None
        if isinstance(claimed, str) and claimed.strip() and claimed.strip() != caller.role:
            if not caller.admin:
                message = (
                    f"this token is bound to role {caller.role!r}; it cannot act as {claimed!r}"
                )
                return json_answer(403, rpc_error(rid, E.INVALID_REQUEST, message))
            caller = Caller(claimed.strip(), True, caller.session, caller.envs)
        modern = any(k == b"mcp-protocol-version" and v == _MODERN for k, v in headers)
        answer = await self._methods.dispatch(req, caller, modern)
        if "result" in answer:
            if modern:
                # a copy: the call log keeps the result it was given
                answer["result"] = {**answer["result"], "resultType": "complete"}
            return json_answer(200, answer)
        not_found = modern and answer["error"]["code"] == E.METHOD_NOT_FOUND
        return json_answer(404 if not_found else 200, answer)

    def _dispatcher(self) -> jsonrpc.Dispatcher:
        capabilities = mcp_methods.TOOLS_CAPABILITIES
        server_info = {"name": self.name, "version": "1"}

        async def tools_call(params: dict, caller: Caller, modern: bool) -> dict:
            answer = await self.call_tool(params, caller)
            if "error" in answer and "jsonrpc" in answer:
                raise jsonrpc.Fault.of(answer["error"])
            return answer

        async def tools_list(params: dict, caller: Caller, modern: bool) -> dict:
            result: dict = {"tools": self.visible_tools(caller.role, caller.envs)}
            if modern:
                result.update(ttlMs=0, cacheScope="private")
            return result

        async def discover(params: dict, caller: Caller, modern: bool) -> dict:
            return {
                "supportedVersions": [MODERN_VERSION],
                "capabilities": capabilities,
                "ttlMs": 0,
                "cacheScope": "private",
                "_meta": {"io.modelcontextprotocol/serverInfo": server_info},
            }

        methods = mcp_methods.dispatcher(
            versions=HANDSHAKE_VERSIONS,
            capabilities=capabilities,
            server_info=server_info,
            list_tools=tools_list,
            call_tool=tools_call,
            lenient_params=True,
            not_found=lambda m: (
                f"method not found: {m!r} (the gateway serves initialize, "
                "server/discover, ping, tools/list, tools/call)"
            ),
        )
        methods.add("server/discover", discover)
        return methods

    # --- tools/call ---------------------------------------------------------------------------
    async def call_tool(self, params: dict, caller: Caller) -> dict:
        """Answer one tools/call (refused, the clock's get_time, or forwarded) and log it."""
        name = params.get("name")
        arguments = params.get("arguments") or {}
        started, stamp = time.perf_counter(), _now_iso()
        route = self.table.routes.get(name) if isinstance(name, str) else None
        hidden = route is not None and not caller.reaches(route.env)
        if hidden:
            route = None  # out of this token's scope: as if the tool did not exist
        env = route.env if route else None
        answer: dict
        marked: str | None = None
        if not isinstance(name, str):
            answer = rpc_error(None, E.INVALID_PARAMS, "tools/call needs a string 'name'")
        elif not isinstance(arguments, dict):
            answer = error_result(f"invalid arguments for tool {name!r}: expected an object")
        elif hidden:
            visible = [t["name"] for t in self.visible_tools(caller.role, caller.envs)]
            answer = error_result(f"unknown tool {name!r}{did_you_mean(name, visible)}")
        elif self.is_disabled(caller.role, name):
            answer = error_result(f"tool {name!r} is disabled for role {caller.role!r}")
        elif route is None and name == GET_TIME and self.clock.armed:
            env = "gateway"
            answer = self._get_time(arguments)
        elif route is None:
            visible = [t["name"] for t in self.visible_tools(caller.role, caller.envs)]
            answer = error_result(f"unknown tool {name!r}{did_you_mean(name, visible)}")
        else:
            key = id(object())
            self.in_flight[key] = {
                "role": caller.role,
                "tool": name,
                "env": env,
                "started": time.time(),
            }
            try:
                answer, marked = await self.forwarder.call(route, arguments, caller)
            finally:
                self.in_flight.pop(key, None)
        self._log(stamp, started, caller, name, env, arguments, answer, call_fault(answer, marked))
        if self.on_call is not None and isinstance(name, str) and isinstance(arguments, dict):
            self.on_call(caller.role, name, arguments, answer)
        return answer

    def pending(self, role: str | None = None) -> list[dict]:
        """The calls forwarded to an env and not answered yet (of `role`), oldest first."""
        calls = [dict(c) for c in list(self.in_flight.values())]
        return sorted(
            (c for c in calls if role is None or c["role"] == role), key=lambda c: c["started"]
        )

    def _get_time(self, arguments: dict) -> dict:
        try:
            unknown = [k for k in arguments if k != "time_zone"]
            if unknown:
                hint = did_you_mean(unknown[0], ["time_zone"])
                raise ClockError(f"get_time: unknown argument {unknown[0]!r}{hint}")
            value = self.clock.get_time(arguments.get("time_zone"))
        except ClockError as e:
            return error_result(str(e))
        return {
            "content": [{"type": "text", "text": json.dumps(value)}],
            "structuredContent": value,
            "isError": False,
        }

    def _log(
        self,
        stamp: str,
        started: float,
        caller: Caller,
        name: Any,
        env: str | None,
        arguments: Any,
        answer: dict,
        fault: str | None = None,
    ) -> None:
        duration = time.perf_counter() - started
        if "jsonrpc" in answer:
            error, result = answer["error"].get("message"), None
        else:
            result = answer
            error = _text(answer) if answer.get("isError") else None
        entry = {
            "time": stamp,
            "role": caller.role,
            "tool": name,
            "env": env,
            "arguments": arguments,
            "result": result,
            "error": error,
            "duration_ms": round(duration * 1000, 3),
        }
        if fault is not None:
            entry["fault"] = fault
        if self.clock.armed:
            now = self.clock.now()
            entry["virtual_time"] = iso(now) if now else None
        self.trajectory.record(entry)
