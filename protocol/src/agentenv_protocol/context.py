"""Who is calling a tool: the `ToolContext` handed to a handler that asks for it.

A gateway stamps the caller's role (and session) into the MCP request `_meta` under
`agentenv.io/role` / `agentenv.io/session`; a direct caller may send the `AgentEnv-Role` header.
A `_meta` role wins over the header, since the header then describes the gateway's connection.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import types
import uuid
from collections.abc import Iterator, Mapping
from typing import Any, Literal

ROLE_META_KEY = "agentenv.io/role"
SESSION_META_KEY = "agentenv.io/session"
ROLE_HEADER = "AgentEnv-Role"
DEFAULT_ROLE = "default"

Transport = Literal["mcp", "rest", "none"]


def normalize_role(value: Any) -> str | None:
    """None for absent, blank and `default` roles; otherwise the stripped role."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    return None if value in ("", DEFAULT_ROLE) else value


@dataclasses.dataclass(frozen=True)
class Caller:
    """The identity a call arrived with; `role` is None when no role was forwarded."""

    role: str | None = None
    session: str | None = None
    raw_role: str | None = None

    @property
    def is_forwarded(self) -> bool:
        return self.role is not None


def _frozen(arguments: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return types.MappingProxyType(dict(arguments or {}))


@dataclasses.dataclass(frozen=True)
class ToolContext:
    """What the protocol knows about one call; injected into a parameter annotated with it
    (hidden from the tool's schema) and readable anywhere in the call via `ToolContext.current()`."""

    caller: Caller = Caller()
    tool: str = ""
    arguments: Mapping[str, Any] = dataclasses.field(
        default_factory=lambda: _frozen(None), hash=False
    )
    call_id: str = ""
    transport: Transport = "none"
    mcp: Any = dataclasses.field(default=None, hash=False, compare=False)

    @property
    def role(self) -> str | None:
        return self.caller.role

    @property
    def session(self) -> str | None:
        return self.caller.session

    @staticmethod
    def current() -> ToolContext:
        """The context of the call running now; `EMPTY` outside any call."""
        return _current.get()

    @classmethod
    def as_caller(
        cls,
        role: str | None = None,
        session: str | None = None,
        *,
        tool: str = "",
        arguments: Mapping[str, Any] | None = None,
    ) -> ToolContext:
        """A context for code acting as `role` outside any call (a seeding script, a test calling a
        handler directly), to bind with `bound(...)`."""
        return cls(
            caller=Caller(role=normalize_role(role), session=session, raw_role=role),
            tool=tool,
            arguments=_frozen(arguments),
            call_id=uuid.uuid4().hex,
        )

    @classmethod
    def for_test(
        cls,
        *,
        role: str | None = None,
        session: str | None = None,
        tool: str = "test",
        arguments: Mapping[str, Any] | None = None,
        transport: Transport = "mcp",
    ) -> ToolContext:
        """A context for tests that call a handler directly."""
        return cls(
            caller=Caller(role=normalize_role(role), session=session, raw_role=role),
            tool=tool,
            arguments=_frozen(arguments),
            call_id=uuid.uuid4().hex,
            transport=transport,
        )


EMPTY = ToolContext()
_current: contextvars.ContextVar[ToolContext] = contextvars.ContextVar(
    "agentenv_protocol.tool_context", default=EMPTY
)


@contextlib.contextmanager
def bound(context: ToolContext) -> Iterator[ToolContext]:
    """Make `context` the current one for the block."""
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)


def caller_from_request(meta: Any, headers: Any) -> Caller:
    """The caller from MCP `_meta` entries (a mapping, or mcp 1.x's `RequestParams.Meta` model)
    and HTTP headers (`_meta` wins when it names a role)."""
    if meta is not None and not isinstance(meta, Mapping):
        dump = getattr(meta, "model_dump", None)
        meta = dump(by_alias=True, exclude_none=True) if callable(dump) else None
    meta = meta or {}
    forwarded = ROLE_META_KEY in meta
    raw_role = (
        meta.get(ROLE_META_KEY)
        if forwarded
        else (headers.get(ROLE_HEADER) if headers is not None else None)
    )
    session = meta.get(SESSION_META_KEY)
    if not isinstance(session, str) or not session:
        session = None if forwarded or headers is None else headers.get("mcp-session-id")
    raw_role = raw_role if isinstance(raw_role, str) else None
    return Caller(role=normalize_role(raw_role), session=session or None, raw_role=raw_role)


def new_context(
    caller: Caller, tool: str, arguments: Mapping[str, Any], transport: Transport, mcp: Any = None
) -> ToolContext:
    return ToolContext(
        caller=caller,
        tool=tool,
        arguments=_frozen(arguments),
        call_id=uuid.uuid4().hex,
        transport=transport,
        mcp=mcp,
    )
