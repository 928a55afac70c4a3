"""The A2A agent server: subclass `A2AAgent`, implement `run(request)`, and `serve()` it.

It answers A2A JSON-RPC at `/a2a` (`message/send`, blocking; `tasks/get`), its card at
`/.well-known/agent-card.json`, and three extensions: `urn:agentenv:mcp-config/v1` (the MCP
servers, with their auth headers, the agent may use), `urn:agentenv:agent-config/v1` (model,
system prompt, limits) and `urn:agentenv:trajectory/v1` (what the agent did, per task).
A context (`contextId`) keeps its conversation, so several prompts make one dialogue.
"""

from __future__ import annotations

import collections
import os
import re
import uuid
from datetime import UTC, datetime
from typing import Any

import anyio

from agentenv_protocol import jsonrpc
from agentenv_protocol.agent import extensions as ext
from agentenv_protocol.agent.types import (
    A2A_PATH,
    AGENT_CARD_PATH,
    AGENT_CONFIG_URI,
    DEFAULT_AGENT_PORT,
    HEALTH_PATH,
    LEGACY_CARD_PATH,
    MCP_CONFIG_URI,
    TRAJECTORY_URI,
    AgentConfig,
    AgentRequest,
    AgentResult,
    McpServer,
)

MAX_KEPT = 256
TASK_NOT_FOUND = -32001
SKILL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
TRAJECTORY_PAGE_MAX = 1000
EXTENSIONS = {
    MCP_CONFIG_URI: (
        "The MCP servers the agent uses (with their auth headers).",
        ext.mcp_config_params(),
    ),
    AGENT_CONFIG_URI: ("Model, system prompt and limits of the agent.", ext.agent_config_params()),
    ext.SKILL_CONFIG_URI: ("Skills (SKILL.md) the agent may use.", ext.skill_config_params()),
    TRAJECTORY_URI: (
        "What the agent did for a task (model turns and tool calls).",
        ext.trajectory_params(live=True),
    ),
}


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class BoundedDict(collections.OrderedDict):
    """A mapping that keeps the MAX_KEPT most recently set entries."""

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > MAX_KEPT:
            self.popitem(last=False)


class A2AAgent:
    """Base class of an agent served over A2A. Override `run`; set `name`/`description`."""

    name = "agent"
    description = "An AgentEnv agent."
    version = "1.0.0"

    def __init__(self, config: AgentConfig | None = None) -> None:
        self.config = config or AgentConfig(model=os.environ.get("AGENTENV_MODEL") or None)
        self.mcp_servers: dict[str, McpServer] = {}
        self.skills: dict[str, dict[str, str]] = {}
        self.histories: BoundedDict = BoundedDict()
        self.tasks: BoundedDict = BoundedDict()
        self.trajectories: BoundedDict = BoundedDict()
        self._locks: dict[str, anyio.Lock] = {}

    async def run(self, request: AgentRequest) -> AgentResult:
        raise NotImplementedError(f"{type(self).__name__} must define async run(request)")

    # --- A2A ----------------------------------------------------------------------------
    def card(self, base_url: str) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "version": self.version,
            "protocolVersion": "0.3.0",
            "url": base_url.rstrip("/") + A2A_PATH,
            "preferredTransport": "JSONRPC",
            "capabilities": {
                "streaming": False,
                "pushNotifications": False,
                "stateTransitionHistory": False,
                "extensions": [
                    {
                        "uri": uri,
                        "description": text,
                        "required": False,
                        "params": params,
                    }
                    for uri, (text, params) in EXTENSIONS.items()
                ],
            },
            "defaultInputModes": ["text"],
            "defaultOutputModes": ["text"],
            "skills": [
                {
                    "id": "solve",
                    "name": "solve",
                    "description": self.description,
                    "tags": ["agentenv"],
                }
            ],
        }

    async def send(self, params: dict[str, Any]) -> dict[str, Any]:
        """`message/send`: run the agent on the message (blocking) and return the A2A task."""
        message = params.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
            raise ValueError("params.message with a parts list is required")
        text = "\n".join(
            p.get("text", "")
            for p in message["parts"]
            if isinstance(p, dict) and p.get("kind") == "text"
        )
        data = [
            p.get("data")
            for p in message["parts"]
            if isinstance(p, dict) and p.get("kind") == "data"
        ]
        if not text and not data:
            raise ValueError("the message has no text or data part")
        if data and not text:
            import json

            text = "\n".join(json.dumps(d) for d in data)
        context_id = message.get("contextId") or uuid.uuid4().hex
        task_id = uuid.uuid4().hex
        lock = self._locks.setdefault(context_id, anyio.Lock())
        async with lock:
            request = AgentRequest(
                text=text,
                context_id=context_id,
                task_id=task_id,
                config=self.config,
                mcp_servers=tuple(self.mcp_servers.values()),
                history=tuple(self.histories.get(context_id, ())),
                metadata=dict(message.get("metadata") or {}),
            )
            try:
                with anyio.fail_after(self.config.timeout_seconds):
                    result = await self.run(request)
            except TimeoutError:
                result = AgentResult(
                    text="",
                    failure=(
                        "agent",
                        f"the agent did not finish within {self.config.timeout_seconds:g}s",
                    ),
                )
            except Exception as e:  # an agent bug fails its task, not the server
                result = AgentResult(text="", failure=("agent", f"{type(e).__name__}: {e}"))
            if result.messages:
                self.histories[context_id] = list(result.messages)
        self.trajectories[task_id] = list(result.trajectory)
        parts: list[dict[str, Any]] = [{"kind": "text", "text": result.text}]
        parts.append({"kind": "data", "data": {"usage": result.usage.to_json()}})
        if result.failure:
            parts.append(
                {
                    "kind": "data",
                    "data": {"failure": {"class": result.failure[0], "message": result.failure[1]}},
                }
            )
        reply = {
            "kind": "message",
            "role": "agent",
            "messageId": uuid.uuid4().hex,
            "contextId": context_id,
            "taskId": task_id,
            "parts": parts,
        }
        task = {
            "kind": "task",
            "id": task_id,
            "contextId": context_id,
            "status": {
                "state": "failed" if result.failure else "completed",
                "message": reply,
                "timestamp": _now(),
            },
            "history": [dict(message, contextId=context_id, taskId=task_id), reply],
        }
        self.tasks[task_id] = task
        return task

    # --- extensions ---------------------------------------------------------------------
    def add_skill(self, body: dict[str, Any]) -> str:
        """skill-config `add` with an inline `skill_md`; ValueError naming the bad field."""
        if not ext.request_accepts(ext.skill_config_params()["methods"]["add"]["request"], body):
            raise ValueError(
                "a skill is {name, description, skill_md} or {name, description, skill_bundle}; "
                f"got keys {sorted(body)}"
            )
        name, description = body.get("name"), body.get("description")
        if not isinstance(name, str) or not SKILL_NAME.match(name):
            raise ValueError(f"'name' {name!r} must match {SKILL_NAME.pattern}")
        if not isinstance(description, str):
            raise ValueError("'description' must be a string")
        if "skill_bundle" in body:
            raise NotImplementedError(
                "this agent takes skills inline (skill_md); skill_bundle is not supported"
            )
        if not isinstance(body.get("skill_md"), str):
            raise ValueError("'skill_md' must be a string")
        self.skills[name] = {"description": description, "skill_md": body["skill_md"]}
        return name

    def add_mcp_server(self, body: dict[str, Any]) -> str:
        url = body.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError("'url' must be an http(s) URL")
        headers = body.get("headers") or {}
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            raise ValueError("'headers' must be an object of strings")
        name = body.get("name") or f"mcp_{uuid.uuid4().hex[:8]}"
        if name in self.mcp_servers:
            raise KeyError(name)
        self.mcp_servers[name] = McpServer(name=name, url=url, headers=dict(headers))
        return name


TASK_NOT_CANCELABLE = -32002


def a2a_routes(agent: Any, *, rpc_path: str = A2A_PATH) -> list[Any]:
    """The A2A routes of any agent object: its card (`card(base_url)`), health, and JSON-RPC at
    /a2a with `message/send` (`await send(params)`) and `tasks/get` (its `tasks` mapping), plus
    `message/stream` when it has `open_stream(params)` (returning a coroutine function that
    hands each event to `emit`) and `tasks/cancel` when it has `cancel(params)`. JSON-RPC is
    served at `rpc_path`."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    def base(request: Request) -> str:
        return str(request.base_url).rstrip("/")

    async def card(request: Request) -> JSONResponse:
        return JSONResponse(agent.card(base(request)))

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def send(params: dict) -> Any:
        try:
            return await agent.send(params)
        except ValueError as e:
            raise jsonrpc.Fault(jsonrpc.INVALID_PARAMS, f"invalid params: {e}") from None

    async def get_task(params: dict) -> Any:
        task = agent.tasks.get(params.get("id"))
        if task is None:
            raise jsonrpc.Fault(TASK_NOT_FOUND, f"task not found: {params.get('id')!r}")
        length = params.get("historyLength")
        if length is None:
            return task
        if not isinstance(length, int) or isinstance(length, bool) or length < 0:
            raise jsonrpc.Fault(jsonrpc.INVALID_PARAMS, "historyLength must be an integer >= 0")
        history = task.get("history") or []
        return {**task, "history": history[len(history) - length :] if length else []}

    handlers: dict[str, Any] = {"message/send": send, "tasks/get": get_task}
    if hasattr(agent, "cancel"):

        async def cancel(params: dict) -> Any:
            try:
                return await agent.cancel(params)
            except KeyError:
                raise jsonrpc.Fault(
                    TASK_NOT_FOUND, f"task not found: {params.get('id')!r}"
                ) from None
            except Exception as e:
                raise jsonrpc.Fault(
                    TASK_NOT_CANCELABLE, f"task cannot be canceled: {params.get('id')!r}"
                ) from e

        handlers["tasks/cancel"] = cancel
    streams = hasattr(agent, "open_stream")
    supported = ", ".join([*handlers, *(["message/stream"] if streams else [])])
    methods = jsonrpc.Dispatcher(
        handlers, not_found=lambda m: f"method not found: {m!r}; supported: {supported}"
    )

    async def rpc(request: Request) -> Any:
        req, answer = jsonrpc.parse_request(await request.body())
        if req is None or answer is not None:
            return JSONResponse(answer)
        if streams and req["method"] == "message/stream":
            params = req.get("params")
            if not isinstance(params, dict):
                return JSONResponse(
                    jsonrpc.error(req.get("id"), jsonrpc.INVALID_PARAMS, "params must be an object")
                )
            try:
                run = await agent.open_stream(params)
            except ValueError as e:
                return JSONResponse(
                    jsonrpc.error(req.get("id"), jsonrpc.INVALID_PARAMS, f"invalid params: {e}")
                )
            return EventStream(req.get("id"), run)
        return JSONResponse(await methods.dispatch(req))

    return [
        Route(AGENT_CARD_PATH, card, methods=["GET"]),
        Route(LEGACY_CARD_PATH, card, methods=["GET"]),
        Route(HEALTH_PATH, health, methods=["GET"]),
        Route(rpc_path, rpc, methods=["POST"]),
    ]


class EventStream:
    """An ASGI response sending each event a task emits as one server-sent event, a JSON-RPC
    result for request `rid` (written as it happens: no generator, so cancel scopes stay in
    the request's task)."""

    def __init__(self, rid: Any, run: Any) -> None:
        self.rid, self.run = rid, run

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        import json

        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", b"no-store"),
                ],
            }
        )

        gone = False

        async def emit(event: dict) -> None:
            # a client that left does not stop the task: it runs on and tasks/get has it
            nonlocal gone
            if gone:
                return
            line = json.dumps(jsonrpc.result(self.rid, event), separators=(",", ":"))
            try:
                await send(
                    {
                        "type": "http.response.body",
                        "body": f"data: {line}\n\n".encode(),
                        "more_body": True,
                    }
                )
            except OSError:
                gone = True

        await self.run(emit)
        if not gone:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


def create_app(agent: A2AAgent) -> Any:
    """The Starlette app serving `agent`."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def mcp_config(request: Request) -> JSONResponse:
        if request.method == "GET":
            return JSONResponse(
                {
                    "mcp_servers": {
                        n: {"url": s.url, "has_headers": bool(s.headers)}
                        for n, s in agent.mcp_servers.items()
                    }
                }
            )
        if request.method == "DELETE":
            body = await _json(request) or {}
            name = body.get("name") if isinstance(body, dict) else None
            if not isinstance(name, str) or agent.mcp_servers.pop(name, None) is None:
                return JSONResponse({"error": f"no MCP server named {name!r}"}, status_code=404)
            return JSONResponse({"status": "removed", "name": name})
        body = await _json(request)
        if not isinstance(body, dict):
            return JSONResponse({"error": "the body must be a JSON object"}, status_code=400)
        try:
            name = agent.add_mcp_server(body)
        except KeyError as e:
            return JSONResponse(
                {"error": f"an MCP server named {e.args[0]!r} is already configured"},
                status_code=409,
            )
        except ValueError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        return JSONResponse({"status": "added", "name": name})

    async def agent_config(request: Request) -> JSONResponse:
        if request.method == "POST":
            body = await _json(request)
            if not isinstance(body, dict):
                return JSONResponse({"error": "the body must be a JSON object"}, status_code=400)
            try:
                agent.config = agent.config.merged(body)
            except (ValueError, TypeError) as e:
                return JSONResponse({"error": str(e)}, status_code=400)
        return JSONResponse({"config": agent.config.to_json()})

    async def trajectory(request: Request) -> JSONResponse:
        body = dict(request.query_params) if request.method == "GET" else await _json(request)
        if not isinstance(body, dict):
            return JSONResponse({"error": "the body must be a JSON object"}, status_code=400)
        try:
            variant = ext.trajectory_variant(body)
            page = _trajectory_page(body) if variant.endswith("_events") else None
        except ValueError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        if variant.endswith("_objects"):
            return JSONResponse(
                {"error": "this agent returns trajectories inline; omit 'objects'"},
                status_code=501,
            )
        task_id, context_id = body.get("task_id"), body.get("context_id")
        if task_id:
            if task_id not in agent.trajectories:
                return JSONResponse(
                    {"error": f"No completed trajectory available for task {task_id!r}"},
                    status_code=404,
                )
            events = list(agent.trajectories[task_id])
            task = agent.tasks.get(task_id) or {}
            context_id = task.get("contextId")
        else:
            task = {}
            events = [
                e
                for tid, t in agent.tasks.items()
                if t["contextId"] == context_id
                for e in agent.trajectories.get(tid, [])
            ]
        if page is None:
            return JSONResponse({"trajectory": events})
        after, limit = page
        chunk = events[after : after + limit]
        return JSONResponse(
            {
                "context_id": context_id,
                "task_id": task_id,
                "state": (task.get("status") or {}).get("state", "completed"),
                "format": "agentenv/v1",
                "events": chunk,
                "next": after + len(chunk),
                "has_more": after + len(chunk) < len(events),
            }
        )

    async def skill_config(request: Request) -> JSONResponse:
        if request.method == "GET":
            return JSONResponse(
                {"skills": {n: {"description": s["description"]} for n, s in agent.skills.items()}}
            )
        body = await _json(request)
        if not isinstance(body, dict):
            return JSONResponse({"error": "the body must be a JSON object"}, status_code=400)
        try:
            name = agent.add_skill(body)
        except NotImplementedError as e:
            return JSONResponse({"error": str(e)}, status_code=501)
        except ValueError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        return JSONResponse({"name": name})

    routes = [
        *a2a_routes(agent),
        Route("/ext/mcp-config", mcp_config, methods=["GET", "POST", "DELETE"]),
        Route("/ext/agent-config", agent_config, methods=["GET", "POST"]),
        Route("/ext/trajectory", trajectory, methods=["GET", "POST"]),
        Route("/ext/skill-config", skill_config, methods=["GET", "POST"]),
    ]
    return Starlette(routes=routes)


def _trajectory_page(body: dict[str, Any]) -> tuple[int, int]:
    after, limit = body.get("after"), body.get("limit", TRAJECTORY_PAGE_MAX)
    if isinstance(after, str) and after.isdigit():  # GET query parameters are strings
        after = int(after)
    if isinstance(limit, str) and limit.isdigit():
        limit = int(limit)
    if not isinstance(after, int) or isinstance(after, bool) or after < 0:
        raise ValueError("'after' must be an integer >= 0")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise ValueError("'limit' must be an integer from 1 to 1000")
    return after, limit


async def _json(request: Any) -> Any:
    try:
        raw = await request.body()
        if not raw:
            return {}
        import json

        return json.loads(raw)
    except ValueError:
        return None


def serve(agent: A2AAgent, *, host: str | None = None, port: int | None = None) -> None:
    """Serve `agent` (blocking) on `A2A_HOST` and `PORT` (or `A2A_PORT`), default 0.0.0.0:8000;
    sandbox providers pass the port they publish as `PORT`."""
    import uvicorn

    host = host or os.environ.get("A2A_HOST") or "0.0.0.0"
    port = (
        port
        if port is not None
        else int(os.environ.get("PORT") or os.environ.get("A2A_PORT") or DEFAULT_AGENT_PORT)
    )
    from agentenv_protocol.serving import uvicorn_options

    # the same slow-client guard as env servers and the gateway: a client that trickles its
    # headers or body is cut off instead of holding a connection open for ever
    # an agent that builds its own app (the proxy agent) is served with it
    own_app = getattr(agent, "create_app", None)
    app = own_app() if callable(own_app) else create_app(agent)
    uvicorn.run(app, host=host, port=port, log_level="warning", **uvicorn_options())
