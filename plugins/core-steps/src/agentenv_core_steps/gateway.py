"""The run's gateway: one MCP gateway per task instance, in the runner's process.

The first `deploy_env` starts it (`gateway_for(ctx)`); every deployed env is registered with it;
it is an instance resource (`GATEWAY`), stopped in the instance's teardown. Tokens live only in
memory and in the run's redactor: the state records URLs, never a token. After a resume the
first step that needs the gateway starts a new one, re-registers the envs the state lists and
re-applies the task's `modify_env_tool_access` changes.

Callers that cannot send a header (a verifier's `verify(mcp_url)`) get a capability URL,
`<gateway>/k/<token>/mcp`: the path carries the bearer token, bound to one role.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from agent_env.aio import shielded, to_thread
from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.resources import InstanceKey

#: The instance resource that stops the instance's gateway when the instance ends.
GATEWAY: InstanceKey[RunGateway] = InstanceKey("core-steps.gateway")
#: task_instance_id -> RunGateway, for lookups by id (`live_gateway`); entries leave when
#: the instance's teardown closes `GATEWAY`.
_GATEWAYS: dict[str, RunGateway] = {}
_LOCK = threading.Lock()
START_TIMEOUT = 30.0


class RunGateway:
    """One task instance's gateway: `url`, `mcp_url`, `add_env`, `issue_token`, `calls()`.
    `RunGateway(id)` serves it on a thread of its own; `await RunGateway.on_this_loop(id)` on
    the caller's event loop, where callers on that loop also reach it without HTTP
    (`in_process_client`)."""

    def __init__(self, task_instance_id: str, *, namespacing: bool = False, _thread: bool = True):
        from agentenv_protocol.gateway import Gateway, TokenInPath

        self.task_instance_id = task_instance_id
        self.gateway = Gateway({}, name=f"gateway-{task_instance_id}", namespacing=namespacing)
        self.app = TokenInPath(self.gateway)
        #: The event loop it is served on when it shares its starter's (`on_this_loop`), else
        #: None (a thread of its own).
        self.loop: asyncio.AbstractEventLoop | None = None
        self._server: Any = None
        self.url = ""
        if _thread:
            from agentenv_protocol.serving import serve_in_thread

            self._server = serve_in_thread(
                self.app, host="127.0.0.1", port=0, startup_timeout=START_TIMEOUT
            )
            self.url = self._server.url
        #: env name -> its data plane right after the deploy (`mark_initial`), or None.
        self.initial: dict[str, list | None] = {}
        #: envs that serve no data/reset (`mark_initial`): a recycle leaves them as they are.
        self.no_reset: list[str] = []

    @classmethod
    async def on_this_loop(cls, task_instance_id: str, *, namespacing: bool = False) -> RunGateway:
        """A gateway served on the running event loop (no thread, no tick of its own): what a
        warm pool's instances use, one loop for all of them."""
        from agentenv_protocol.serving import start_on_loop

        gateway = cls(task_instance_id, namespacing=namespacing, _thread=False)
        async with asyncio.timeout(START_TIMEOUT):
            gateway._server = await start_on_loop(gateway.app, host="127.0.0.1", port=0)
        gateway.loop = asyncio.get_running_loop()
        gateway.url = gateway._server.url
        return gateway

    def in_process_client(self, token: str, mcp_url: str | None) -> InProcessClient | None:
        """An MCP client for a caller holding `token` that was told `mcp_url`, answered on this
        loop without HTTP; None when the gateway runs elsewhere or `mcp_url` is not its own
        (the caller then uses HTTP)."""
        if self.loop is None or mcp_url != self.mcp_url or not token:
            return None
        if _running_loop() is not self.loop:
            return None
        return InProcessClient(self.gateway, token)

    @property
    def mcp_url(self) -> str:
        from agentenv_protocol import MCP_PATH

        return self.url + MCP_PATH

    @property
    def admin_token(self) -> str:
        return self.gateway.admin_token

    @property
    def envs(self) -> dict[str, str]:
        return dict(self.gateway.envs)

    def issue_token(self, role: str, envs: list[str] | None = None) -> str:
        """A new random bearer token that may act only as `role` (and reach only `envs`)."""
        return self.gateway.issue_token(role, envs)

    def capability_url(self, token: str, path: str = "/mcp") -> str:
        """A URL that authenticates by its path (for callers that cannot set headers)."""
        from agentenv_protocol.gateway import CAPABILITY_PREFIX

        return f"{self.url}{CAPABILITY_PREFIX}{token}{path}"

    async def add_env(self, name: str, url: str, secret: str | None = None) -> None:
        await self.gateway.add_env(name, url, secret)

    def remove_env(self, name: str) -> None:
        if name in self.gateway.envs:
            self.gateway.remove_env(name)

    def calls(self) -> list[dict]:
        """Every tool call the gateway served so far (redacted), oldest first."""
        return list(self.gateway.trajectory.records)

    def pending(self, role: str) -> list[dict]:
        """The tool calls of `role` the gateway is still waiting on an env for."""
        return self.gateway.mcp.pending(role)

    async def mark_initial(self) -> list[str]:
        """Remember every env's data plane as it is now (right after the deploy), what
        `recycle` re-seeds it with (a warm pool calls this once per held instance); returns
        the envs that serve no `data/reset` (a pool reuses those only when the bundle says
        `reuse = "reset"`: they keep no state between episodes)."""
        from agentenv_core_steps.env_resets import initial_states

        self.initial, self.no_reset = await initial_states(self, sorted(self.envs))
        return self.no_reset

    async def recycle(self) -> None:
        """Make this gateway and its envs ready for the next episode of a warm pool: every
        env's data plane reset (`data/reset`) and re-seeded with what `mark_initial` read,
        the episode's agent tokens revoked, its call log, clock and per-role tool rules
        cleared. Raises when an env does not reset."""
        from agentenv_core_steps.env_resets import reset_envs

        revoked = self.gateway.auth.revoke_all()
        self.gateway.roles.rules.clear()
        self.gateway.clock.clear()
        self.gateway.trajectory.clear()
        # the log that could hold them is gone: masking them in later episodes' calls would
        # only make every call and read slower, episode after episode
        self.gateway.trajectory.forget_secrets(revoked)
        resettable = sorted(set(self.envs) - set(self.no_reset))
        await reset_envs(self, resettable, self.initial)

    def stop(self) -> None:
        """Stop serving, from any thread but a loop-served gateway's own loop (`aclose`)."""
        from agentenv_core_steps.triggers.resume import forget

        self.gateway.triggers.stop()
        if self.loop is None:
            self._server.stop(timeout=5.0)
        elif not self.loop.is_closed():
            if _running_loop() is self.loop:  # blocking here would wait on itself forever
                raise RuntimeError(
                    f"gateway of {self.task_instance_id} is served on this event loop: "
                    "`await aclose()` it (or `close_gateway`) instead of stop()"
                )
            future = asyncio.run_coroutine_threadsafe(self._server.stop(), self.loop)
            future.result(10.0)
        forget(self.task_instance_id)

    async def aclose(self) -> None:
        """Stop serving, from the event loop of the instance that started it."""
        if self.loop is None:
            await to_thread(self.stop)
            return
        from agentenv_core_steps.triggers.resume import forget

        self.gateway.triggers.stop()
        await shielded(self._server.stop())
        forget(self.task_instance_id)


class InProcessClient:
    """`EnvClient`'s `list_tools` / `call_tool` for a caller on a loop-served gateway's own
    loop: each request is answered by `Gateway.answer_in_process` (the token's auth, role
    rules, limits and call log, as over HTTP) with no socket, codec or thread hop."""

    def __init__(self, gateway: Any, token: str):
        self.gateway = gateway
        self.token = token
        self._next_id = 0

    async def __aenter__(self) -> InProcessClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None

    async def _request(self, method: str, params: dict) -> dict:
        from agentenv_protocol.errors import ProtocolError, rpc_error_from

        self._next_id += 1
        request = {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}
        status, data, _ = await self.gateway.answer_in_process(
            self.token, json.dumps(request).encode()
        )
        try:
            answer = json.loads(data) if data else {}
        except ValueError:
            answer = {}
        if status == 200 and isinstance(answer, dict) and isinstance(answer.get("error"), dict):
            raise rpc_error_from(answer["error"], method=method)
        if status != 200 or not isinstance(answer, dict) or "result" not in answer:
            detail = answer.get("error") if isinstance(answer, dict) else None
            raise ProtocolError(
                f"{method}: the gateway answered {status}: {detail or data[:300]!r}"
            )
        return answer["result"]

    async def list_tools(self) -> list[Any]:
        from agentenv_protocol.types import EnvironmentTool

        result = await self._request("tools/list", {})
        return [
            EnvironmentTool(
                name=t["name"], description=t.get("description"), inputSchema=t.get("inputSchema")
            )
            for t in result.get("tools", [])
        ]

    async def call_tool(self, name: str, arguments: dict | None = None) -> Any:
        from agentenv_protocol.client import ToolResult

        result = await self._request("tools/call", {"name": name, "arguments": arguments or {}})
        return ToolResult(
            is_error=bool(result.get("isError")),
            content=list(result.get("content") or []),
            structured=result.get("structuredContent"),
        )


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def gateway_for(ctx: StepContext) -> RunGateway:
    """The gateway of `ctx`'s task instance, started on first use. A fresh gateway (first
    deploy, or a resumed run in a new process) registers every env the state lists."""
    key = ctx.task_instance_id
    with _LOCK:
        existing = _GATEWAYS.get(key)
    if existing is None:  # an instance that adopted a warm pool's instance uses its gateway
        lent = ctx.instance_resource_if_started(GATEWAY)
        if lent is not None and lent.task_instance_id != key:
            with _LOCK:
                existing = lent if _GATEWAYS.get(lent.task_instance_id) is lent else None
    if existing is not None:
        return existing
    try:
        if ctx.warm:  # a warm pool's: every episode's calls come from this loop
            gateway = await RunGateway.on_this_loop(key)
        else:
            gateway = await to_thread(RunGateway, key)
    except Exception as e:
        raise StepFailed(
            ctx.step_id, f"the run's gateway did not start: {e}", failure_class="infrastructure"
        ) from e
    with _LOCK:
        raced = _GATEWAYS.get(key)
        if raced is None:
            _GATEWAYS[key] = gateway
    if raced is not None:
        await gateway.aclose()
        return raced
    try:
        await ctx.instance_resource(
            GATEWAY,
            start=lambda: gateway,
            close=lambda _g: close_gateway(key),
        )
    except BaseException:  # not tied to the instance: nothing would ever stop it
        await shielded(close_gateway(key))
        raise
    _add_secret(ctx, gateway.admin_token)
    from agentenv_core_steps.envs import secret as env_secret

    for name, entry in sorted((ctx.get("envs", default={}) or {}).items()):
        if isinstance(entry, dict) and entry.get("url"):
            try:
                await gateway.add_env(name, entry["url"], secret=env_secret.for_env(ctx, name))
            except Exception as e:  # noqa: BLE001 - a gone env is reported by whoever uses it
                ctx.log(f"gateway: env {name!r} at {entry['url']} not re-registered: {e}")
                continue
            ctx.set("envs", name, "gateway_url", value=gateway.url)
            ctx.set("envs", name, "mcp_url", value=gateway.mcp_url)
    from agentenv_core_steps.tool_access import replay_tool_access

    await replay_tool_access(ctx, gateway)
    from agentenv_core_steps.triggers.resume import restore

    restore(ctx, gateway)
    ctx.set("gateway", value={"url": gateway.url, "mcp_url": gateway.mcp_url})
    return gateway


def live_gateway(task_instance_id: str) -> RunGateway | None:
    with _LOCK:
        return _GATEWAYS.get(task_instance_id)


def stop_gateway(task_instance_id: str) -> bool:
    """Stop the instance's gateway if this process serves one; True when one was stopped."""
    with _LOCK:
        gateway = _GATEWAYS.pop(task_instance_id, None)
    if gateway is None:
        return False
    gateway.stop()
    return True


async def close_gateway(task_instance_id: str) -> bool:
    """`stop_gateway` from the event loop of the instance (a loop-served gateway stops there)."""
    with _LOCK:
        gateway = _GATEWAYS.pop(task_instance_id, None)
    if gateway is None:
        return False
    await gateway.aclose()
    return True


def issue_token(
    ctx: StepContext, gateway: RunGateway, role: str, envs: list[str] | None = None
) -> str:
    """A role-bound token for `gateway`, known to the run's redactor before anyone sees it;
    with `envs` it reaches only those envs' tools (an agent's deploy step's `env_ids`)."""
    token = gateway.issue_token(role, envs)
    _add_secret(ctx, token)
    return token


def _add_secret(ctx: StepContext, value: str) -> None:
    add = getattr(ctx, "add_secret", None)
    if add is not None:
        add(value)
