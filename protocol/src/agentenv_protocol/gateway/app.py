"""The MCP gateway: one authenticated MCP endpoint in front of N environment servers.

The hot path (`POST /mcp`) is plain ASGI: parse, check the caller's role, forward `tools/call`
to the owning env at the JSON-RPC level over a keep-alive pool (fastpost), log, answer. The
other routes live in control.py.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx

from agentenv_protocol import _http, jsonrpc
from agentenv_protocol import errors as E
from agentenv_protocol.context import ROLE_META_KEY, SESSION_META_KEY
from agentenv_protocol.fastpost import ForwardConnectError, ForwardError, ForwardTimeout, PostPool
from agentenv_protocol.gateway.asgi import read_body, respond
from agentenv_protocol.gateway.auth import Auth, Caller
from agentenv_protocol.gateway.clock import GET_TIME_TOOL, ClockError, EnvClock, iso
from agentenv_protocol.gateway.control import ControlRoutes, GatewayError
from agentenv_protocol.gateway.roles import RoleRules
from agentenv_protocol.gateway.routing import Route, build_routes, check_env_name
from agentenv_protocol.gateway.trajectory import Trajectory
from agentenv_protocol.jsonrpc import error as rpc_error
from agentenv_protocol.jsonrpc import parse_request
from agentenv_protocol.mcp_http import HANDSHAKE_VERSIONS, MODERN_VERSION, McpHttp, McpHttpError
from agentenv_protocol.schema import did_you_mean
from agentenv_protocol.types import (
    HIDDEN_BY_DEFAULT_META_KEY,
    MCP_PATH,
    MCP_TRANSPORT,
    WELL_KNOWN_PATH,
)

log = logging.getLogger(__name__)


def _now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


_Caller = Caller  # the name before gateway/auth.py


_Route = Route  # the name before gateway/routing.py


class Gateway(ControlRoutes):
    """ASGI app fronting `envs` (name -> base URL). Every route needs `Authorization: Bearer <token>`:
    `tokens` maps agent tokens to the one role each may act as; `admin_token` (generated when not
    given) may act as any role (`AgentEnv-Role` header) and use the control routes."""

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
        connect_timeout: float = 3.0,
        max_request_bytes: int = 8 * 1024 * 1024,
        clock: EnvClock | None = None,
        startup_timeout: float = 30.0,
    ) -> None:
        for env in envs:
            check_env_name(env)
        self.name = name
        self.envs = {k: v.rstrip("/") for k, v in envs.items()}
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
        self.routes: dict[str, Route] = {}
        self.env_tools: dict[str, list[dict]] = {}
        self.cards: dict[str, dict] = {}
        self.mcp_paths: dict[str, str] = {}
        self.roles = RoleRules()
        self.discovered = False
        self.startup_error: BaseException | None = None
        self._http: httpx.AsyncClient | None = None
        self._mcp: dict[str, McpHttp] = {}
        self._pools: dict[str, PostPool] = {}
        self._lock: anyio.Lock | None = None
        self._methods = self._dispatcher()

    # --- setup ------------------------------------------------------------------------------
    def issue_token(self, role: str) -> str:
        """A new random bearer token bound to `role`."""
        return self.auth.issue_token(role)

    @property
    def admin_token(self) -> str:
        return self.auth.admin_token

    @property
    def tokens(self) -> dict[str, str]:
        return self.auth.tokens

    def _client(self) -> httpx.AsyncClient:
        limits = httpx.Limits(
            max_connections=512, max_keepalive_connections=256, keepalive_expiry=30
        )
        return _http.client(self.call_timeout, connect=self.connect_timeout, limits=limits)

    async def discover(self) -> None:
        """Read every env's card and tools, retrying unreachable envs for `startup_timeout` seconds;
        raise GatewayError naming the env that never answered, or both envs of a tool-name clash."""
        found: dict[str, list[dict]] = {}
        async with self._client() as http:
            deadline = time.monotonic() + self.startup_timeout
            pending = dict(self.envs)
            while True:
                problems: dict[str, str] = {}

                async def one(env: str, url: str) -> None:
                    try:
                        found[env] = await self._discover_one(http, env, url)
                    except GatewayError as e:
                        problems[env] = str(e)  # noqa: B023 (awaited in this iteration)

                async with anyio.create_task_group() as tg:
                    for env, url in pending.items():
                        tg.start_soon(one, env, url)
                pending = {env: self.envs[env] for env in problems}
                if not pending:
                    break
                if time.monotonic() >= deadline:
                    raise GatewayError("; ".join(problems[env] for env in sorted(problems)))
                await anyio.sleep(0.1)
        self.routes = self._build_routes(self.envs, found)
        self.env_tools = found
        self.discovered = True

    async def add_env(self, name: str, url: str) -> list[str]:
        """Front one more env while serving; returns the names its tools are exposed under.
        A name clash (or an unreachable env) raises GatewayError and changes nothing."""
        check_env_name(name)
        if name in self.envs:
            raise GatewayError(f"environment {name!r} is already fronted (at {self.envs[name]})")
        url = url.rstrip("/")
        async with self._client() as http:
            tools = await self._discover_one(http, name, url)
        envs = {**self.envs, name: url}
        found = {**self.env_tools, name: tools}
        routes = self._build_routes(envs, found)
        self.envs, self.env_tools, self.routes = envs, found, routes
        if self._http is not None:
            self._pools[name] = PostPool(
                url, connect_timeout=self.connect_timeout, timeout=self.call_timeout
            )
            self._mcp[name] = McpHttp(
                url + self.mcp_paths.get(name, MCP_PATH),
                pool=self._pools[name],
                client_name=self.name,
            )
        return sorted(n for n, r in routes.items() if r.env == name)

    def remove_env(self, name: str) -> None:
        """Stop fronting `name`: its tools leave `tools/list` at once."""
        if name not in self.envs:
            raise GatewayError(
                f"environment {name!r} is not fronted{did_you_mean(name, self.envs)}"
            )
        self.envs = {k: v for k, v in self.envs.items() if k != name}
        self.env_tools = {k: v for k, v in self.env_tools.items() if k != name}
        self.routes = {n: r for n, r in self.routes.items() if r.env != name}
        self.cards.pop(name, None)
        self._mcp.pop(name, None)
        self._pools.pop(name, None)  # idle connections close when collected

    async def _discover_one(self, http: httpx.AsyncClient, env: str, url: str) -> list[dict]:
        card = None
        try:
            response = await http.get(url + WELL_KNOWN_PATH, timeout=10)
            if response.status_code == 200:
                card = response.json()
        except httpx.HTTPError as e:
            raise GatewayError(
                f"environment {env!r} is unreachable at {url}: {type(e).__name__}: {e}"
            ) from None
        except ValueError:
            card = None
        path = MCP_PATH
        for iface in (card or {}).get("additionalInterfaces") or []:
            if (
                isinstance(iface, dict)
                and iface.get("transport") == MCP_TRANSPORT
                and iface.get("url")
            ):
                path = iface["url"]
        self.mcp_paths[env] = path
        if card is not None:
            self.cards[env] = card
        try:
            answer = await McpHttp(url + path, http, client_name=self.name).request(
                "tools/list", {}, timeout=30
            )
        except (httpx.HTTPError, McpHttpError) as e:
            raise GatewayError(
                f"environment {env!r} did not list its tools at {url + path}: {e}"
            ) from None
        if "error" in answer:
            raise GatewayError(f"environment {env!r} refused tools/list: {answer['error']}")
        return list((answer.get("result") or {}).get("tools") or [])

    def _build_routes(
        self, envs: Mapping[str, str], found: dict[str, list[dict]]
    ) -> dict[str, Route]:
        return build_routes(envs, found, namespacing=self.namespacing)

    # --- roles ------------------------------------------------------------------------------
    def set_tools(self, role: str, tools: list[str] | str, *, enabled: bool) -> dict:
        """Enable or disable `tools` (or `*`) for `role` (or `*`); returns the rules per role."""
        return self.roles.set(
            role, tools, enabled=enabled, known=[*self.routes, GET_TIME_TOOL["name"]]
        )

    def role_rules(self) -> dict:
        return self.roles.describe()

    @property
    def rules(self) -> dict[str, dict[str, bool]]:
        return self.roles.rules

    def is_disabled(self, role: str, tool: str) -> bool:
        route = self.routes.get(tool)
        meta = route.descriptor.get("_meta") if route is not None else None
        hidden = isinstance(meta, dict) and meta.get(HIDDEN_BY_DEFAULT_META_KEY) is True
        return self.roles.is_disabled(role, tool, hidden)

    def visible_tools(self, role: str) -> list[dict]:
        tools = [r.descriptor for n, r in self.routes.items() if not self.is_disabled(role, n)]
        if (
            self.clock.armed
            and GET_TIME_TOOL["name"] not in self.routes
            and not self.is_disabled(role, "get_time")
        ):
            tools.append(GET_TIME_TOOL)
        return tools

    # --- ASGI -------------------------------------------------------------------------------
    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        await self._ensure_started()
        caller = self._authenticate(scope)
        if isinstance(caller, tuple):
            await self._respond(
                send,
                caller[0],
                {"error": caller[1]},
                [(b"www-authenticate", b'Bearer realm="agentenv-gateway"')]
                if caller[0] == 401
                else [],
            )
            return
        path, method = scope["path"], scope["method"]
        if path == MCP_PATH or path == MCP_PATH + "/":
            if method == "POST":
                await self._mcp_post(scope, receive, send, caller)
            else:
                await self._respond(
                    send,
                    405,
                    {"error": f"{method} {MCP_PATH} is not supported; POST JSON-RPC"},
                    [(b"allow", b"POST")],
                )
            return
        await self._control(scope, receive, send, caller, path, method)

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
        if self._http is not None:
            return
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._http is not None:
                return
            if not self.discovered:
                await self.discover()
            self._http = self._client()
            self._pools = {
                env: PostPool(url, connect_timeout=self.connect_timeout, timeout=self.call_timeout)
                for env, url in self.envs.items()
            }
            self._mcp = {
                env: McpHttp(
                    url + self.mcp_paths.get(env, MCP_PATH),
                    pool=self._pools[env],
                    client_name=self.name,
                )
                for env, url in self.envs.items()
            }

    def _authenticate(self, scope: dict) -> Caller | tuple[int, str]:
        return self.auth.authenticate(scope)

    async def _read(self, receive: Any) -> bytes | None:
        return await read_body(receive, self.max_request_bytes)

    _respond = staticmethod(respond)

    async def aclose(self) -> None:
        for pool in self._pools.values():
            await pool.aclose()
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        self.trajectory.close()

    # --- MCP --------------------------------------------------------------------------------
    async def _mcp_post(self, scope: dict, receive: Any, send: Any, caller: Caller) -> None:
        body = await self._read(receive)
        if body is None:
            await self._respond(
                send,
                413,
                rpc_error(
                    None, E.INVALID_REQUEST, f"request body exceeds {self.max_request_bytes} bytes"
                ),
            )
            return
        req, error = parse_request(body)
        if error is not None:
            await self._respond(send, 400, error)
            return
        if "id" not in req:
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        rid = req["id"]
        params = req.get("params") if isinstance(req.get("params"), dict) else {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        claimed = meta.get(ROLE_META_KEY)
        if isinstance(claimed, str) and claimed.strip() and claimed.strip() != caller.role:
            if not caller.admin:
                await self._respond(
                    send,
                    403,
                    rpc_error(
                        rid,
                        E.INVALID_REQUEST,
                        f"this token is bound to role {caller.role!r}; it cannot act as {claimed!r}",
                    ),
                )
                return
            caller = Caller(claimed.strip(), True, caller.session)
        modern = any(
            k == b"mcp-protocol-version" and v == MODERN_VERSION.encode()
            for k, v in scope["headers"]
        )
        answer = await self._methods.dispatch(req, caller, modern)
        if "result" in answer:
            if modern:
                answer["result"]["resultType"] = "complete"
            await self._respond(send, 200, answer)
        else:
            await self._respond(
                send,
                404 if modern and answer["error"]["code"] == E.METHOD_NOT_FOUND else 200,
                answer,
            )

    def _dispatcher(self) -> jsonrpc.Dispatcher:
        async def tools_call(params: dict, caller: Caller, modern: bool) -> dict:
            answer = await self._call_tool(params, caller)
            if "error" in answer and "jsonrpc" in answer:
                raise jsonrpc.Fault.of(answer["error"])
            return answer

        async def tools_list(params: dict, caller: Caller, modern: bool) -> dict:
            result = {"tools": self.visible_tools(caller.role)}
            if modern:
                result.update(ttlMs=0, cacheScope="private")
            return result

        async def discover(params: dict, caller: Caller, modern: bool) -> dict:
            return {
                "supportedVersions": [MODERN_VERSION],
                "capabilities": {"tools": {"listChanged": False}},
                "ttlMs": 0,
                "cacheScope": "private",
                "_meta": {
                    "io.modelcontextprotocol/serverInfo": {"name": self.name, "version": "1"}
                },
            }

        async def initialize(params: dict, caller: Caller, modern: bool) -> dict:
            asked = params.get("protocolVersion")
            return {
                "protocolVersion": asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": self.name, "version": "1"},
            }

        async def ping(params: dict, caller: Caller, modern: bool) -> dict:
            return {}

        return jsonrpc.Dispatcher(
            {
                "tools/call": tools_call,
                "tools/list": tools_list,
                "server/discover": discover,
                "initialize": initialize,
                "ping": ping,
            },
            lenient_params=True,
            not_found=lambda m: (
                f"method not found: {m!r} (the gateway serves initialize, "
                "server/discover, ping, tools/list, tools/call)"
            ),
        )

    async def _call_tool(self, params: dict, caller: Caller) -> dict:
        name = params.get("name")
        arguments = params.get("arguments") or {}
        started, stamp = time.perf_counter(), _now_iso()
        route = self.routes.get(name) if isinstance(name, str) else None
        env = route.env if route else None
        answer: dict
        if not isinstance(name, str):
            answer = rpc_error(None, E.INVALID_PARAMS, "tools/call needs a string 'name'")
        elif not isinstance(arguments, dict):
            answer = _error_result(f"invalid arguments for tool {name!r}: expected an object")
        elif self.is_disabled(caller.role, name):
            answer = _error_result(f"tool {name!r} is disabled for role {caller.role!r}")
        elif route is None and name == GET_TIME_TOOL["name"] and self.clock.armed:
            env = "gateway"
            try:
                unknown = [k for k in arguments if k != "time_zone"]
                if unknown:
                    raise ClockError(
                        f"get_time: unknown argument {unknown[0]!r}{did_you_mean(unknown[0], ['time_zone'])}"
                    )
                value = self.clock.get_time(arguments.get("time_zone"))
                answer = {
                    "content": [{"type": "text", "text": json.dumps(value)}],
                    "structuredContent": value,
                    "isError": False,
                }
            except ClockError as e:
                answer = _error_result(str(e))
        elif route is None:
            answer = _error_result(
                f"unknown tool {name!r}{did_you_mean(name, self.visible_tools_names(caller.role))}"
            )
        else:
            answer = await self._forward(route, arguments, caller)
        duration = time.perf_counter() - started
        if "jsonrpc" in answer:
            error = answer["error"].get("message")
            result = None
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
        if self.clock.armed:
            now = self.clock.now()
            entry["virtual_time"] = iso(now) if now else None
        self.trajectory.record(entry)
        return answer

    def visible_tools_names(self, role: str) -> list[str]:
        return [t["name"] for t in self.visible_tools(role)]

    async def _forward(self, route: Route, arguments: dict, caller: Caller) -> dict:
        mcp = self._mcp[route.env]
        meta = {ROLE_META_KEY: caller.role, SESSION_META_KEY: caller.session}
        url = self.envs[route.env]
        try:
            answer = await mcp.request(
                "tools/call", {"name": route.tool, "arguments": arguments}, meta=meta
            )
        except ForwardTimeout:
            return _error_result(
                f"environment {route.env!r} did not answer tool {route.tool!r} within "
                f"{self.call_timeout:g}s"
            )
        except ForwardConnectError as e:
            return _error_result(
                f"environment {route.env!r} is not reachable at {url} ({e}); it may have stopped"
            )
        except ForwardError as e:
            return _error_result(
                f"environment {route.env!r} failed while answering tool {route.tool!r}: "
                f"{type(e).__name__}: {e}"
            )
        except McpHttpError as e:
            return _error_result(
                f"environment {route.env!r} gave an invalid answer to tool {route.tool!r}: {e}"
            )
        if "error" in answer:
            return {"jsonrpc": "2.0", "id": None, "error": answer["error"]}
        result = answer.get("result") or {}
        result.pop("_meta", None)
        result.pop("resultType", None)
        return result


def _error_result(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _text(result: dict) -> str:
    return "\n".join(c.get("text", "") for c in result.get("content") or [] if isinstance(c, dict))
