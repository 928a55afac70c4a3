"""peer-agents/v1: the agents of one task reaching each other.

AgentEnv sets an agent's routing table (`POST /ext/peer-agents`, `{"peers": [{name, url,
card?, description?}]}`; an empty list clears it). An agent that enables the extension without
handlers of its own gets `PeerAgents`: the table, and six MCP tools over it (`peer_list`,
`peer_get_card`, `peer_send_message`, `peer_start_task`, `peer_get_task`, `peer_cancel_task`)
served at `PEER_MCP_PATH` on the agent's own port to loopback callers, and handed to each task
as the MCP server `peer_agents`. The tools wrap the peers' A2A `message/send` (non-blocking),
`tasks/get` and `tasks/cancel`; a wait ends within `_MAX_WAIT_SECONDS`, so a tool call answers
inside the minute MCP clients commonly allow a request.
"""

from __future__ import annotations

import collections
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
from pydantic import BaseModel, ConfigDict, Field

from agentenv_protocol._http import tls_context

PEER_AGENTS_ENDPOINT = "/ext/peer-agents"
PEER_MCP_PATH = "/ext/peer-agents/mcp"
PEER_MCP_SERVER_NAME = "peer_agents"
A2A_RPC_PATH = "/a2a"
CARD_PATH = "/.well-known/agent-card.json"

_DEFAULT_WAIT_SECONDS = 45
_MAX_WAIT_SECONDS = 50
#: How long one call to a peer (a send, a read, a cancel) may take before the tool gives up.
_CALL_BUDGET_SECONDS = 20.0
_REQUEST_TIMEOUT_SECONDS = 30.0
#: The least time a poll is given, even when the wait has less left: a poll may end a wait late
#: by this much, never by a whole request timeout.
_LAST_POLL_TIMEOUT_SECONDS = 5.0
_POLL_INTERVAL_SECONDS = 0.5
_FIRST_POLL_SECONDS = 0.05
_MAX_TRACKED_TASKS = 512
#: A peer's answer is read into memory: one larger than this is refused, not read on.
_MAX_REPLY_BYTES = 16 << 20

TERMINAL_STATES = frozenset({"completed", "failed", "canceled", "rejected"})
#: States in which the peer waits on its caller: waiting longer cannot change them.
WAITING_STATES = frozenset({"input-required", "auth-required"})


class PeerError(Exception):
    """A tool call that cannot be done; its message is the tool's error text."""


class PeerAgent(BaseModel):
    """One row of the routing table."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128)
    url: str = Field(pattern=r"^https?://\S+$")
    card: dict[str, Any] | None = None
    description: str | None = None


class PeerAgentsSetRequest(BaseModel):
    """The body of `POST /ext/peer-agents`: the whole table (an empty list clears it)."""

    model_config = ConfigDict(extra="forbid")

    peers: list[PeerAgent]


def rpc_url(url: str) -> str:
    """Where a peer answers A2A JSON-RPC: its URL, or its URL plus `/a2a` unless it ends so."""
    url = url.rstrip("/")
    return url if url.endswith(A2A_RPC_PATH) else url + A2A_RPC_PATH


def _http_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=_REQUEST_TIMEOUT_SECONDS, verify=tls_context())


async def _call(
    rpc: str, method: str, params: dict[str, Any], *, timeout: float = _REQUEST_TIMEOUT_SECONDS
) -> dict[str, Any]:
    """One A2A JSON-RPC call to a peer; its result, or PeerError saying what went wrong."""
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
    try:
        raw = bytearray()
        async with (
            _http_client() as http,
            http.stream("POST", rpc, json=body, timeout=timeout) as response,
        ):
            async for chunk in response.aiter_bytes():
                raw += chunk
                if len(raw) > _MAX_REPLY_BYTES:
                    limit = _MAX_REPLY_BYTES
                    raise PeerError(f"the peer's answer to {method} exceeds {limit} bytes")
    except httpx.TimeoutException:
        raise TimeoutError(f"{method} timed out after {timeout:g}s") from None
    except httpx.HTTPError as e:
        raise PeerError(f"the peer could not be reached for {method}: {type(e).__name__}") from None
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise PeerError(
            f"the peer answered {method} with HTTP {response.status_code}, not JSON-RPC"
        )
    if isinstance(answer.get("error"), dict):
        error = answer["error"]
        raise PeerError(f"the peer refused {method}: {error.get('message')} ({error.get('code')})")
    result = answer.get("result")
    if not isinstance(result, dict):
        raise PeerError(f"the peer answered {method} without a result object")
    return result


async def _send(rpc: str, message: dict[str, Any]) -> dict[str, Any]:
    """`message/send` without blocking: the peer answers with the task it started (or a message)."""
    params = {"message": message, "configuration": {"blocking": False}}
    return await _call(rpc, "message/send", params)


async def _fetch_card(url: str) -> dict[str, Any]:
    base = url.rstrip("/").removesuffix(A2A_RPC_PATH)
    try:
        async with _http_client() as http:
            response = await http.get(base + CARD_PATH)
        card = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        card = None
    if not isinstance(card, dict):
        raise PeerError(f"the peer at {base} serves no agent card at {CARD_PATH}")
    return card


def _text_and_parts(parts: Any) -> tuple[list[str], list[dict[str, Any]]]:
    texts: list[str] = []
    others: list[dict[str, Any]] = []
    for part in _clean_parts(parts):
        if part.get("kind") == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        else:
            others.append(part)
    return texts, others


def summary(answer: dict[str, Any], *, history: bool = False) -> dict[str, Any]:
    """What a tool returns for a peer's task (or direct message): ids and state, and once the
    peer is done or waits on its caller, its answer's text and its other parts."""
    if answer.get("kind") == "message":
        texts, others = _text_and_parts(answer.get("parts"))
        reply = {"context_id": answer.get("contextId"), "state": "completed"}
        reply["response"] = "\n".join(texts)
        return reply | ({"parts": others} if others else {})
    status = _object(answer.get("status"))
    state = status.get("state", "unknown")
    if state == "submitted":  # accepted and underway: to the model, one state of not done yet
        state = "working"
    reply = {"task_id": answer.get("id"), "context_id": answer.get("contextId"), "state": state}
    if state in TERMINAL_STATES or state in WAITING_STATES:
        artifacts = answer.get("artifacts") or []
        parts = [p for a in artifacts for p in _object(a).get("parts") or []]
        texts, others = _text_and_parts(parts or _object(status.get("message")).get("parts"))
        reply["response"] = "\n".join(texts)
        if others:
            reply["parts"] = others
    if history:
        reply["history"] = [
            {"role": m.get("role"), "parts": _clean_parts(m.get("parts"))}
            for m in answer.get("history") or []
            if isinstance(m, dict)
        ]
    return reply


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _clean_parts(parts: Any) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in part.items() if v is not None}
        for part in (parts if isinstance(parts, list) else [])
        if isinstance(part, dict)
    ]


class _Tracked:
    __slots__ = ("peer", "rpc", "state")

    def __init__(self, peer: str, rpc: str, state: str) -> None:
        self.peer, self.rpc, self.state = peer, rpc, state


class PeerAgents:
    """The SDK's peer-agents handlers: the routing table, the tasks its tools started, and the
    tools themselves (`call(tool, arguments)`); `routes()` serves them over MCP."""

    def __init__(self) -> None:
        self.peers: dict[str, PeerAgent] = {}
        self.raw: list[dict[str, Any]] = []
        self.tasks: collections.OrderedDict[str, _Tracked] = collections.OrderedDict()
        self.live = False
        self.servers: dict[str, Any] | None = None  # the task MCP servers it is listed in
        self.port: int | None = None

    # --- the extension's two operations --------------------------------------------------------
    def set_table(self, request: PeerAgentsSetRequest) -> dict[str, Any]:
        """Replace the table; ValueError when two peers share a name (the table is kept)."""
        names = [peer.name for peer in request.peers]
        if len(set(names)) != len(names):
            raise ValueError("peer names must be unique")
        self.peers = {peer.name: peer for peer in request.peers}
        self.raw = [peer.model_dump(exclude_none=True) for peer in request.peers]
        return {"status": "updated", "peers": len(self.peers)}

    def table(self) -> dict[str, Any]:
        return {"peers": list(self.raw)}

    @staticmethod
    def mcp_server(port: int) -> dict[str, Any]:
        """The `mcp_servers` entry a task gets: the tools on this agent's own port, over loopback."""
        return {"url": f"http://127.0.0.1:{port}{PEER_MCP_PATH}", "headers": None}

    def note_port(self, port: int) -> None:
        """The agent's server took a request on `port`: its tasks reach the tools there."""
        if self.servers is not None and port != self.port:
            self.port = port
            self.servers[PEER_MCP_SERVER_NAME] = self.mcp_server(port)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The tools answer inside this (the application's lifespan), 503 outside it."""
        self.live = True
        try:
            yield
        finally:
            self.live = False

    # --- the tools -----------------------------------------------------------------------------
    def _peer(self, name: Any) -> PeerAgent:
        if not isinstance(name, str) or name not in self.peers:
            available = ", ".join(sorted(self.peers)) or "(none)"
            raise PeerError(f"unknown peer {name!r}. Available peers: {available}")
        return self.peers[name]

    def _task(self, task_id: Any) -> _Tracked:
        if not isinstance(task_id, str) or task_id not in self.tasks:
            raise PeerError(
                f"unknown task_id {task_id!r}: give the task_id that peer_send_message "
                "or peer_start_task returned"
            )
        return self.tasks[task_id]

    def _track(self, peer: PeerAgent, answer: dict[str, Any]) -> None:
        task_id = answer.get("task_id")
        if not isinstance(task_id, str):
            return
        self.tasks[task_id] = _Tracked(peer.name, rpc_url(peer.url), answer["state"])
        self.tasks.move_to_end(task_id)
        while len(self.tasks) > _MAX_TRACKED_TASKS:
            finished = [t for t, tracked in self.tasks.items() if tracked.state in TERMINAL_STATES]
            self.tasks.pop(finished[0] if finished else next(iter(self.tasks)))

    async def peer_list(self) -> list[dict[str, Any]]:
        return [
            {
                "name": peer.name,
                "description": peer.description or (peer.card or {}).get("description") or "",
                "url": peer.url,
            }
            for peer in self.peers.values()
        ]

    async def peer_get_card(self, name: str) -> dict[str, Any]:
        peer = self._peer(name)
        if peer.card is None:
            peer.card = await _budgeted(_fetch_card(peer.url))
        return peer.card

    def _message(self, prompt: str | None, parts: list | None, context_id: str | None) -> dict:
        sent: list[Any] = [{"kind": "text", "text": prompt}] if prompt else []
        for part in parts or []:
            if not isinstance(part, dict) or part.get("kind") not in {"text", "data", "file"}:
                raise PeerError("each of parts is an A2A part: {kind: text|data|file, ...}")
            sent.append(part)
        if not sent:
            raise PeerError("give a prompt or parts to send")
        message = {"kind": "message", "messageId": uuid.uuid4().hex, "role": "user", "parts": sent}
        return message | ({"contextId": context_id} if context_id else {})

    async def peer_start_task(
        self, name: str, prompt: str | None = None, parts: list | None = None,
        context_id: str | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        peer = self._peer(name)
        message = self._message(prompt, parts, context_id)
        answer = summary(await _budgeted(_send(rpc_url(peer.url), message)))
        self._track(peer, answer)
        return {k: answer[k] for k in ("task_id", "context_id", "state") if k in answer}

    async def peer_send_message(
        self, name: str, prompt: str | None = None, parts: list | None = None,
        context_id: str | None = None, timeout_seconds: float = _DEFAULT_WAIT_SECONDS,
    ) -> dict[str, Any]:  # fmt: skip
        peer = self._peer(name)
        deadline = time.monotonic() + min(max(float(timeout_seconds), 0.0), _MAX_WAIT_SECONDS)
        rpc = rpc_url(peer.url)
        answer = summary(await _budgeted(_send(rpc, self._message(prompt, parts, context_id))))
        self._track(peer, answer)
        pause = _FIRST_POLL_SECONDS
        while answer["state"] not in TERMINAL_STATES | WAITING_STATES and "task_id" in answer:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await anyio.sleep(min(pause, _POLL_INTERVAL_SECONDS, left))
            pause *= 2  # a quick answer is seen quickly, a slow one is not polled hard
            left = deadline - time.monotonic()
            if left <= 0:
                break
            wait = min(_REQUEST_TIMEOUT_SECONDS, max(left, _LAST_POLL_TIMEOUT_SECONDS))
            try:
                polled = await _call(rpc, "tasks/get", {"id": answer["task_id"]}, timeout=wait)
            except TimeoutError:
                break
            answer = summary(polled)
            self._track(peer, answer)
        if answer["state"] in TERMINAL_STATES | WAITING_STATES:
            return answer
        return {k: answer[k] for k in ("task_id", "context_id", "state") if k in answer}

    async def peer_get_task(self, task_id: str, history_length: int | None = None) -> dict:
        tracked = self._task(task_id)
        params: dict[str, Any] = {"id": task_id}
        if history_length is not None:
            params["historyLength"] = history_length
        polled = await _budgeted(_call(tracked.rpc, "tasks/get", params))
        answer = summary(polled, history=bool(history_length))
        tracked.state = answer["state"]
        return answer

    async def peer_cancel_task(self, task_id: str) -> dict[str, Any]:
        tracked = self._task(task_id)
        answer = summary(await _budgeted(_call(tracked.rpc, "tasks/cancel", {"id": task_id})))
        tracked.state = answer["state"]
        return {"task_id": task_id, "state": answer["state"]}

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Run one tool within its budget; PeerError with the text the model reads."""
        method = getattr(self, tool, None) if tool in TOOL_NAMES else None
        if method is None:
            raise PeerError(f"unknown tool {tool!r}. Tools: {', '.join(TOOL_NAMES)}")
        try:
            return await method(**arguments)
        except _OutOfBudget as e:
            raise PeerError(f"{tool} got no answer from the peer within {e.budget:g}s") from None


class _OutOfBudget(Exception):
    def __init__(self, budget: float) -> None:
        self.budget = budget


async def _budgeted(call: Any) -> dict[str, Any]:
    """Await one call to a peer for at most `_CALL_BUDGET_SECONDS`."""
    budget = _CALL_BUDGET_SECONDS
    try:
        with anyio.fail_after(budget):
            return await call
    except TimeoutError:
        raise _OutOfBudget(budget) from None


TOOL_NAMES: tuple[str, ...] = (
    "peer_list",
    "peer_get_card",
    "peer_send_message",
    "peer_start_task",
    "peer_get_task",
    "peer_cancel_task",
)


def sdk_handlers(runtime: Any) -> dict[tuple[str, str], Any]:
    """The SDK's `set` and `list` of peer-agents/v1 (the registry's default handlers)."""
    from pydantic import ValidationError

    from agentenv_protocol.a2a_agent.defaults import OperationError, as_dict, pydantic_message
    from agentenv_protocol.agent.extensions import PEER_AGENTS_URI

    peers = _peers_of(runtime)

    async def set_table(request: Any = None) -> dict[str, Any]:
        try:
            table = PeerAgentsSetRequest.model_validate(as_dict(request))
        except ValidationError as e:
            raise OperationError(400, f"invalid peer table: {pydantic_message(e)}") from None
        try:
            return peers.set_table(table)
        except ValueError as e:
            raise OperationError(400, str(e)) from None

    async def list_table(request: Any = None) -> dict[str, Any]:
        return peers.table()

    return {(PEER_AGENTS_URI, "set"): set_table, (PEER_AGENTS_URI, "list"): list_table}


def _peers_of(runtime: Any) -> PeerAgents:
    peers = getattr(runtime, "peer_agents", None)
    if peers is None:
        peers = runtime.peer_agents = PeerAgents()
    return peers
