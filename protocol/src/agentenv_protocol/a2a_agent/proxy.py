"""`ProxyAgent`: an A2A agent with no model, whose turns a driver outside its sandbox takes.

Each message it gets is an open turn (its task `working`) until the driver replies. The driver
speaks `urn:agentenv:proxy/v1` at `POST /ext/proxy/<operation>`: `claim` a token, long-poll
`next` for the open turns, list a turn's `tools` (its env servers' tools and `bash`), `act`
(a tool call over one `ToolSession` per server, or a command in the proxy's folder) and poll its
`result`, `record` the model calls it makes (the actions are then held to them), and `reply`.
Everything a turn runs stops when the turn closes; the trajectory is written as it goes.
"""

from __future__ import annotations

import contextlib
import hmac
import shutil  # noqa: F401 - `proxy.shutil.which` is where the shell is looked up
import uuid
from pathlib import Path
from typing import Any

import anyio
import attrs
from starlette.requests import Request
from starlette.responses import JSONResponse

from agentenv_protocol import jsonrpc
from agentenv_protocol.a2a_agent import proxy_actions as actions
from agentenv_protocol.a2a_agent import proxy_record as rec
from agentenv_protocol.a2a_agent import proxy_tools as tools
from agentenv_protocol.a2a_agent.proxy_skills import SkillExists, write_skill
from agentenv_protocol.a2a_agent.proxy_turns import (
    Action,
    Refused,
    Turn,
    end_turn,
    finish_task,
    new_task,
)
from agentenv_protocol.a2a_agent.proxy_types import (
    OPERATIONS,
    PROXY_V1,
    AgentCardDocument,
    BashAction,
    ProxyActionState,
    ToolAction,
    parse_action,
    text_parts,
)
from agentenv_protocol.agent import extensions as ext
from agentenv_protocol.agent.server import TASK_NOT_FOUND, A2AAgent
from agentenv_protocol.agent.server import create_app as agent_app
from agentenv_protocol.agent.types import A2A_PATH, AgentRequest, AgentResult, Usage
from agentenv_protocol.transfers import TransferError, download

__all__ = ["ProxyAgent", "ProxyActionState", "PROXY_V1", "PROXY_URI"]

PROXY_URI = PROXY_V1.uri
#: Where skills are written, one folder each.
SKILLS_DIR = Path.home() / "skills"
#: A tool action's default deadline, and the one deadline for listing a turn's tools.
TOOL_TIMEOUT_SECONDS = 600.0
#: A bash action's default deadline.
BASH_TIMEOUT_SECONDS = 3600.0
#: How long output is still kept after a command's shell exits.
OUTPUT_GRACE_SECONDS = 1.0
#: How long `next`, `act` and `result` wait for a change before answering.
LONG_POLL_SECONDS = 25.0
MIN_TOKEN_CHARS = 22
TASK_NOT_CANCELABLE = -32002


@attrs.frozen(kw_only=True)
class ProxyAppState:
    """`app.state.agentenv_a2a` of a proxy's app: the agent and its card."""

    agent: ProxyAgent
    card: AgentCardDocument


class ProxyAgent(A2AAgent):
    """An agent whose turns are driven from outside through `urn:agentenv:proxy/v1`.

    `shell=False` is a proxy for an agent that works in no sandbox: no `bash`, no skills."""

    name = "proxy"
    description = "An agent whose model runs outside its sandbox, driving it turn by turn."

    def __init__(
        self,
        *,
        shell: bool = True,
        long_poll_seconds: float = LONG_POLL_SECONDS,
        config: Any = None,
        folder: Path | str | None = None,
    ) -> None:
        super().__init__(config)
        self.shell = shell
        self.long_poll_seconds = long_poll_seconds
        #: where commands run: `folder`, else the working folder the proxy was made in
        self.folder = Path(folder) if folder is not None else Path.cwd()
        self._token: str | None = None
        self._turns: dict[str, Turn] = {}
        self._actions: dict[str, Action] = {}
        self._version = 0
        self._changed: anyio.Event | None = None
        self._group: Any = None
        self._operations = {
            "next": self._next,
            "tools": self._list_tools,
            "act": self._act,
            "result": self._result,
            "record": self._record,
            "reply": self._reply,
        }
        self._rpc_methods = jsonrpc.Dispatcher(
            {"message/send": self._send, "tasks/get": self._get, "tasks/cancel": self._cancel},
            not_found=lambda m: (
                f"method not found: {m!r}; supported: message/send, tasks/get, tasks/cancel"
            ),
        )

    async def run(self, request: AgentRequest) -> AgentResult:
        raise NotImplementedError("a proxy's turns are answered by its driver (proxy/v1)")

    def card(self, base_url: str) -> dict[str, Any]:
        card = super().card(base_url)
        extensions = [
            e
            for e in card["capabilities"]["extensions"]
            if self.shell or e["uri"] != ext.SKILL_CONFIG_URI
        ]
        extensions.append(PROXY_V1.to_card())
        card["capabilities"]["extensions"] = extensions
        return card

    def create_app(self) -> Any:
        """The Starlette app: our A2A agent server's routes, with the proxy's own `/a2a`
        (non-blocking sends, cancel), `/ext/proxy/*` and `/ext/skill-config`."""
        from starlette.applications import Starlette
        from starlette.routing import Route

        own = [
            Route(A2A_PATH, self._rpc, methods=["POST"]),
            Route("/ext/proxy/{operation}", self._operation, methods=["POST"]),
            Route("/ext/skill-config", self._skill_config, methods=["GET", "POST"]),
        ]
        paths = {route.path for route in own}
        base = [r for r in agent_app(self).routes if getattr(r, "path", None) not in paths]
        app = Starlette(routes=own + base, lifespan=self._lifespan)
        app.state.agentenv_a2a = ProxyAppState(agent=self, card=AgentCardDocument(self.card("")))
        return app

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Any) -> Any:
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                with anyio.CancelScope(shield=True):
                    for turn in list(self._turns.values()):
                        await self._close(
                            turn, "failed", error="the proxy stopped", code="proxy.stopped"
                        )
                group.cancel_scope.cancel()

    # --- A2A ---------------------------------------------------------------------------------
    async def _rpc(self, request: Request) -> JSONResponse:
        req, answer = jsonrpc.parse_request(await request.body())
        if req is None:
            return JSONResponse(answer)
        return JSONResponse(await self._rpc_methods.dispatch(req))

    async def _send(self, params: dict[str, Any]) -> dict[str, Any]:
        message = params.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
            raise jsonrpc.Fault(
                jsonrpc.INVALID_PARAMS,
                "invalid params: params.message with a parts list is required",
            )
        if not isinstance(message.get("contextId"), str | None):
            raise jsonrpc.Fault(
                jsonrpc.INVALID_PARAMS, "invalid params: contextId must be a string"
            )
        configuration = params.get("configuration") or {}
        blocking = not (isinstance(configuration, dict) and configuration.get("blocking") is False)
        context_id = message.get("contextId") or uuid.uuid4().hex
        task = new_task(message, context_id)
        self.tasks[task["id"]] = task
        parts = message["parts"]
        if not text_parts(parts):
            reason = "the proxy takes messages of text parts only; this one has another part"
            finish_task(
                task,
                "failed",
                [{"kind": "text", "text": reason}],
                Usage(),
                ("proxy.unsupported_part", reason),
            )
            return task
        turn = Turn(
            task_id=task["id"],
            task=task,
            context_id=context_id,
            parts=[{"kind": "text", "text": p["text"]} for p in parts],
            system_prompt=self.config.system_prompt,
            skills=[dict(skill) for skill in self.skills.values()],
            servers=dict(self.mcp_servers),
        )
        self._turns[turn.task_id] = turn
        self.trajectories[turn.task_id] = turn.spans
        self._bump()
        if blocking:
            with anyio.move_on_after(self.config.timeout_seconds):
                await turn.settled.wait()
            limit = self.config.timeout_seconds
            await self._close(
                turn,
                "failed",
                error=f"the driver didn't reply within {limit:g}s",
                code="proxy.timeout",
            )
        return task

    async def _get(self, params: dict[str, Any]) -> dict[str, Any]:
        task_id = params.get("id")
        task = self.tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None:
            raise jsonrpc.Fault(TASK_NOT_FOUND, f"task not found: {params.get('id')!r}")
        return task

    async def _cancel(self, params: dict[str, Any]) -> dict[str, Any]:
        task = await self._get(params)
        turn = self._turns.get(task["id"])
        if turn is None:
            raise jsonrpc.Fault(
                TASK_NOT_CANCELABLE,
                f"task {task['id']!r} is {task['status']['state']}; "
                "only a working task can be canceled",
            )
        await self._close(turn, "canceled")
        return task

    # --- proxy/v1 ----------------------------------------------------------------------------
    async def _operation(self, request: Request) -> JSONResponse:
        operation = request.path_params["operation"]
        if operation not in OPERATIONS:
            return _error(404, f"no proxy operation {operation!r}; known: {', '.join(OPERATIONS)}")
        body = await _body(request)
        if body is None:
            return _error(400, "the body must be a JSON object")
        try:
            if operation == "claim":
                return JSONResponse(self._claim(body))
            self._check_token(body.get("token"))
            return JSONResponse(await self._operations[operation](body))
        except Refused as e:
            return _error(e.status, e.message)

    def _claim(self, body: dict[str, Any]) -> dict[str, Any]:
        token = body.get("token")
        if not isinstance(token, str) or len(token) < MIN_TOKEN_CHARS:
            raise Refused(400, f"'token' must be a string of at least {MIN_TOKEN_CHARS} characters")
        if self._token is None:
            self._token = token
        elif not _same_token(token, self._token):
            raise Refused(409, "this proxy was claimed with another token")
        return {"status": "claimed"}

    def _check_token(self, token: Any) -> None:
        if self._token is None:
            raise Refused(401, "the proxy isn't claimed yet: POST /ext/proxy/claim first")
        if not isinstance(token, str) or not _same_token(token, self._token):
            raise Refused(401, "'token' is not the token this proxy was claimed with")

    async def _next(self, body: dict[str, Any]) -> dict[str, Any]:
        after = body.get("after", 0)
        if not isinstance(after, int) or isinstance(after, bool) or after < 0:
            raise Refused(400, "'after' must be a whole number >= 0")
        with anyio.move_on_after(self.long_poll_seconds):
            while self._version <= after:
                await self._change().wait()
        return {"version": self._version, "turns": [t.wire() for t in self._turns.values()]}

    async def _list_tools(self, body: dict[str, Any]) -> dict[str, Any]:
        return {"tools": await self._tools(self._open_turn(body))}

    async def _act(self, body: dict[str, Any]) -> dict[str, Any]:
        turn = self._open_turn(body)
        action_id = body.get("action_id")
        if not isinstance(action_id, str) or not action_id:
            raise Refused(400, "'action_id' must be a non-empty string")
        action = self._actions.get(action_id)
        if action is None:
            action = await self._start(turn, action_id, body.get("action"))
        elif action.turn is not turn:
            raise Refused(409, f"action id {action_id!r} belongs to another turn")
        return await actions.state(action, self.long_poll_seconds)

    async def _result(self, body: dict[str, Any]) -> dict[str, Any]:
        action_id = body.get("action_id")
        action = self._actions.get(action_id) if isinstance(action_id, str) else None
        if action is None:
            raise Refused(404, f"no action {body.get('action_id')!r} (or its turn is over)")
        return await actions.state(action, self.long_poll_seconds)

    async def _record(self, body: dict[str, Any]) -> dict[str, Any]:
        turn = self._open_turn(body)
        try:
            call = rec.ModelCall.parse(body)
        except ValueError as e:
            raise Refused(400, str(e)) from None
        async with turn.record_lock:
            offered = await self._tools(turn)
            turn.check_open()
            turn.check_all_run("record another model call")
            rec.record(turn, call, {tool["name"]: tool.get("server") for tool in offered})
        return {"status": "recorded", "expected_calls": len(turn.expected or ())}

    async def _reply(self, body: dict[str, Any]) -> dict[str, Any]:
        turn = self._open_turn(body)
        parts, error = body.get("parts"), body.get("error")
        if (parts is None) == (error is None):
            raise Refused(400, "a reply carries 'parts' (non-empty) or 'error', not both")
        if error is not None and (not isinstance(error, str) or not error):
            raise Refused(400, "'error' must be a non-empty string")
        if parts is not None and not text_parts(parts):
            raise Refused(
                400, '\'parts\' must be a non-empty list of {"kind": "text", "text"} parts'
            )
        async with turn.record_lock:
            turn.check_open()
            if parts is not None:
                turn.check_all_run("reply")
                await self._close(turn, "completed", parts=parts)
            else:
                await self._close(turn, "failed", error=error)
        return {"status": "closed", "task_id": turn.task_id}

    # --- turns -------------------------------------------------------------------------------
    def _open_turn(self, body: dict[str, Any]) -> Turn:
        task_id = body.get("task_id")
        turn = self._turns.get(task_id) if isinstance(task_id, str) else None
        if turn is None:
            raise Refused(404, f"no open turn {body.get('task_id')!r}")
        return turn

    def _change(self) -> anyio.Event:
        if self._changed is None:
            self._changed = anyio.Event()
        return self._changed

    def _bump(self) -> None:
        self._version += 1
        self._change().set()
        self._changed = anyio.Event()

    async def _close(
        self,
        turn: Turn,
        state: str,
        *,
        parts: list | None = None,
        error: str | None = None,
        code: str | None = None,
    ) -> None:
        """End `turn`: stop what it runs, forget its actions, close its sessions, write its span
        and end its task in `state`."""
        if turn.closed:
            return
        turn.closed = True
        self._turns.pop(turn.task_id, None)
        self._bump()
        running = [a for a in turn.actions.values() if not a.done.is_set()]
        for action in running:
            action.stop()
        with anyio.CancelScope(shield=True):
            for action in running:
                await action.done.wait()
            for action_id in turn.actions:
                self._actions.pop(action_id, None)
            for session in turn.sessions.values():
                with contextlib.suppress(Exception):
                    await session.close()
        end_turn(turn, turn.task, state, parts, error, code)

    # --- tools ---------------------------------------------------------------------------------
    async def _tools(self, turn: Turn) -> list[dict[str, Any]]:
        """What `turn` can call: each env server's tools (listed once per turn, all within one
        deadline) and `bash`; two offering one name are refused."""
        async with turn.tools_lock:
            if turn.tools is None:
                turn.tools = await tools.list_tools(
                    turn, self._listed, limit=TOOL_TIMEOUT_SECONDS, with_bash=self.shell
                )
            return turn.tools

    async def _listed(self, turn: Turn, server: Any) -> list[Any]:
        """One env server's tools, over the turn's session with it."""
        return await (await tools.session(turn, server.name)).list_tools()

    # --- actions -------------------------------------------------------------------------------
    async def _start(self, turn: Turn, action_id: str, value: Any) -> Action:
        try:
            request = parse_action(value)
        except ValueError as e:
            raise Refused(400, str(e)) from None
        if isinstance(request, BashAction) and not self.shell:
            raise Refused(409, "this proxy works in no sandbox (shell=False): it runs no commands")
        if isinstance(request, ToolAction) and request.server not in turn.servers:
            known = ", ".join(turn.servers) or "none"
            raise Refused(
                400, f"no env server {request.server!r} for this turn; registered: {known}"
            )
        if self._group is None:
            raise Refused(503, "the proxy's app isn't running (its lifespan hasn't started)")
        async with turn.record_lock:
            turn.check_open()
            if action_id in self._actions:  # the same id, started meanwhile
                return self._actions[action_id]
            turn.take_expected(request)
            action = Action(action_id=action_id, turn=turn, request=request)
            self._actions[action_id] = turn.actions[action_id] = action
            self._group.start_soon(self._perform, action)
        return action

    async def _perform(self, action: Action) -> None:
        limits = actions.Limits(
            tool_timeout=TOOL_TIMEOUT_SECONDS,
            bash_timeout=BASH_TIMEOUT_SECONDS,
            grace=OUTPUT_GRACE_SECONDS,
            folder=self.folder,
            spawn=self._group.start_soon,
        )
        await actions.perform(action, limits)

    # --- skills --------------------------------------------------------------------------------
    async def _skill_config(self, request: Request) -> JSONResponse:
        if request.method == "GET":
            return JSONResponse(
                {"skills": {n: {"description": s["description"]} for n, s in self.skills.items()}}
            )
        if not self.shell:
            return _error(409, "this proxy works in no sandbox (shell=False): it keeps no skills")
        body = await _body(request)
        if body is None:
            return _error(400, "the body must be a JSON object")
        if body.get("name") in self.skills:
            return _error(409, f"skill {body['name']!r} was already given")
        try:
            skill = await write_skill(body, SKILLS_DIR, download)
        except SkillExists as e:
            return _error(409, f"skill {e.args[0]!r} was already given")
        except ValueError as e:
            return _error(400, str(e))
        except (TransferError, OSError) as e:
            return _error(502, f"the skill's files couldn't be had: {e}")
        self.skills[skill["name"]] = skill
        return JSONResponse({"name": skill["name"]})


def _same_token(given: str, held: str) -> bool:
    return hmac.compare_digest(given.encode(), held.encode())


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _body(request: Request) -> dict[str, Any] | None:
    raw = await request.body()
    try:
        body = jsonrpc.loads(raw) if raw else {}
    except (ValueError, UnicodeDecodeError):
        return None
    return body if isinstance(body, dict) else None
