"""The route table: the fronted envs, what each serves (read from its card and `tools/list`),
and exposed tool name -> (env, tool) with clash checks."""

from __future__ import annotations

import time
from collections.abc import Mapping

import anyio
import attrs
import httpx

from agentenv_protocol._http import why
from agentenv_protocol.gateway.errors import GatewayError
from agentenv_protocol.mcp_http import McpHttp, McpHttpError
from agentenv_protocol.schema import did_you_mean
from agentenv_protocol.types import ENV_SECRET_HEADER, MCP_PATH, MCP_TRANSPORT, WELL_KNOWN_PATH

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


class RouteTable:
    """The envs a gateway fronts (name -> base URL) and the routes to their tools. Changes are
    all-or-nothing: a clash or an unreachable env raises GatewayError and changes nothing."""

    def __init__(self, envs: Mapping[str, str], *, namespacing: bool, client_name: str) -> None:
        for env in envs:
            check_env_name(env)
        self.envs = {k: v.rstrip("/") for k, v in envs.items()}
        self.namespacing = namespacing
        self.client_name = client_name
        self.routes: dict[str, Route] = {}
        self.env_tools: dict[str, list[dict]] = {}
        self.cards: dict[str, dict] = {}
        self.mcp_paths: dict[str, str] = {}
        #: env -> the secret its server checks (`agentenv_protocol.gateway_only`), if any
        self.secrets: dict[str, str] = {}

    def headers_for(self, env: str) -> dict[str, str]:
        """The headers every request forwarded to `env` carries (its secret, when it has one)."""
        secret = self.secrets.get(env)
        return {ENV_SECRET_HEADER: secret} if secret else {}

    def mcp_url(self, env: str) -> str:
        return self.envs[env] + self.mcp_paths.get(env, MCP_PATH)

    async def discover(self, http: httpx.AsyncClient, startup_timeout: float) -> None:
        """Read every env's card and tools, retrying unreachable envs for `startup_timeout`
        seconds; raise GatewayError naming the env that never answered, or a tool-name clash."""
        found: dict[str, list[dict]] = {}
        deadline = time.monotonic() + startup_timeout
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
        self.routes = build_routes(self.envs, found, namespacing=self.namespacing)
        self.env_tools = found

    async def add(
        self, http: httpx.AsyncClient, name: str, url: str, secret: str | None = None
    ) -> list[str]:
        """Front one more env (whose server checks `secret`, if given); returns the names its
        tools are exposed under."""
        check_env_name(name)
        if name in self.envs:
            raise GatewayError(f"environment {name!r} is already fronted (at {self.envs[name]})")
        url = url.rstrip("/")
        if secret:
            self.secrets[name] = secret
        try:
            tools = await self._discover_one(http, name, url)
        except BaseException:
            self.secrets.pop(name, None)
            raise
        envs = {**self.envs, name: url}
        found = {**self.env_tools, name: tools}
        routes = build_routes(envs, found, namespacing=self.namespacing)
        self.envs, self.env_tools, self.routes = envs, found, routes
        return sorted(n for n, r in routes.items() if r.env == name)

    def remove(self, name: str) -> None:
        """Stop fronting `name`: its tools leave the routes at once."""
        if name not in self.envs:
            raise GatewayError(
                f"environment {name!r} is not fronted{did_you_mean(name, self.envs)}"
            )
        self.envs = {k: v for k, v in self.envs.items() if k != name}
        self.env_tools = {k: v for k, v in self.env_tools.items() if k != name}
        self.routes = {n: r for n, r in self.routes.items() if r.env != name}
        self.cards.pop(name, None)
        self.mcp_paths.pop(name, None)
        self.secrets.pop(name, None)

    async def _discover_one(self, http: httpx.AsyncClient, env: str, url: str) -> list[dict]:
        card = None
        try:
            response = await http.get(url + WELL_KNOWN_PATH, timeout=10)
            if response.status_code == 200:
                card = response.json()
        except httpx.HTTPError as e:
            raise GatewayError(f"environment {env!r} is unreachable at {url}: {why(e)}") from None
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
        try:
            answer = await McpHttp(
                url + path, http, client_name=self.client_name, headers=self.headers_for(env)
            ).request("tools/list", {}, timeout=30)
        except (httpx.HTTPError, McpHttpError) as e:
            raise GatewayError(
                f"environment {env!r} did not list its tools at {url + path}: {why(e)}"
            ) from None
        if "error" in answer:
            raise GatewayError(f"environment {env!r} refused tools/list: {answer['error']}")
        self.mcp_paths[env] = path
        if card is not None:
            self.cards[env] = card
        return list((answer.get("result") or {}).get("tools") or [])
