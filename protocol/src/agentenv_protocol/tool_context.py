"""Import path kept from the existing SDK for `ToolContext` and the role constants."""

from agentenv_protocol.context import (
    DEFAULT_ROLE,
    EMPTY,
    ROLE_HEADER,
    ROLE_META_KEY,
    SESSION_META_KEY,
    Caller,
    ToolContext,
    bound,
    caller_from_request,
    normalize_role,
)

__all__ = [
    "DEFAULT_ROLE",
    "EMPTY",
    "ROLE_HEADER",
    "ROLE_META_KEY",
    "SESSION_META_KEY",
    "Caller",
    "ToolContext",
    "bound",
    "caller_from_request",
    "normalize_role",
]
