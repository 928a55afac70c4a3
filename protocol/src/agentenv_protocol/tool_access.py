"""Per-role tool visibility rules, with tools hidden by default.

Used by an environment that sets `tool_access = True` (agents reach it with no gateway in front):
it then filters `tools/list`, refuses `tools/call` by role and serves `urn:agentenv:disable-tool/v1`
and `urn:agentenv:enable-tool/v1` at the gateway's paths (`POST /tools/disable`, `/tools/enable`,
body `{role, tools: [...] | "*"}`), so a tool-access step works the same with or without a gateway.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentenv_protocol.context import DEFAULT_ROLE, ToolContext
from agentenv_protocol.errors import AgentEnvError
from agentenv_protocol.types import EnvironmentExtension

WILDCARD = "*"
DISABLE_TOOL_EXTENSION_URI = "urn:agentenv:disable-tool/v1"
ENABLE_TOOL_EXTENSION_URI = "urn:agentenv:enable-tool/v1"
PATHS = {"disable": "/tools/disable", "enable": "/tools/enable"}

_REQUEST = {
    "type": "object",
    "properties": {
        "role": {"type": "string"},
        "tools": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"const": WILDCARD}]},
    },
    "required": ["role", "tools"],
}


def rule_disables(
    rules: dict[str, dict[str, bool]], role: str, tool: str, hidden: bool = False
) -> bool:
    """Whether `rules` (`rules[role][tool] = disabled`, `*` for any) disable `tool` for `role`:
    the role's rules first, then `*`'s; a rule naming the tool beats a `*` rule, and a tool hidden
    by default skips `*` rules, staying hidden until a rule names it."""
    for r in (role, WILDCARD):
        entries = rules.get(r) or {}
        if tool in entries:
            return entries[tool]
        if WILDCARD in entries and not hidden:
            return entries[WILDCARD]
    return hidden


def apply_rule(rules: dict[str, dict[str, bool]], role: str, tool: str, disabled: bool) -> None:
    """Record one enable/disable: `*`/`*` resets everything, `*`/tool applies to every role."""
    if role == WILDCARD and tool == WILDCARD:
        rules.clear()
        rules[WILDCARD] = {WILDCARD: disabled}
    elif role == WILDCARD:
        for entries in rules.values():
            entries[tool] = disabled
        rules.setdefault(WILDCARD, {})[tool] = disabled
    elif tool == WILDCARD:
        rules[role] = {WILDCARD: disabled}
    else:
        rules.setdefault(role, {})[tool] = disabled


class ToolAccess:
    """The rules of one environment and the tools it hides by default."""

    def __init__(self, hidden_by_default: Iterable[str] = ()) -> None:
        self.rules: dict[str, dict[str, bool]] = {}
        self.hidden_by_default = set(hidden_by_default)

    def is_disabled(self, role: str | None, tool: str) -> bool:
        return rule_disables(self.rules, role or DEFAULT_ROLE, tool, tool in self.hidden_by_default)

    def apply(self, role: str, tool: str, disabled: bool) -> None:
        """Record one rule (`*` for every role or every tool; see `apply_rule`)."""
        apply_rule(self.rules, role, tool, disabled)

    def change(self, action: str, body: object) -> dict:
        """Apply a disable/enable request; answers the role's rules `{role, disabled, allowed}`."""
        role = body.get("role") if isinstance(body, dict) else None
        if not isinstance(role, str) or not role:
            raise AgentEnvError("invalid_params", "missing or invalid 'role' field")
        tools = body.get("tools") if isinstance(body, dict) else None
        if tools == WILDCARD:
            names = [WILDCARD]
        elif isinstance(tools, list) and all(isinstance(t, str) for t in tools):
            names = tools
        else:
            raise AgentEnvError(
                "invalid_params", "'tools' must be a list of strings or the string '*'"
            )
        for name in names:
            self.apply(role, name, action == "disable")
        entries = self.rules.get(role, {})
        return {
            "role": role,
            "disabled": sorted(k for k, v in entries.items() if v),
            "allowed": sorted(k for k, v in entries.items() if not v),
        }

    def check_call(self, context: ToolContext) -> None:
        role = context.caller.role or DEFAULT_ROLE
        if self.is_disabled(role, context.tool):
            raise AgentEnvError(
                "permission_denied",
                f"Tool '{context.tool}' is disabled for role '{role}'",
                status=403,
            )


def extensions() -> list[EnvironmentExtension]:
    """The card entries of the two tool-access extensions."""
    return [
        EnvironmentExtension(
            uri=uri,
            description=description,
            required=False,
            params={
                "endpoint": PATHS[action],
                "methods": {action: {"method": "POST", "request": _REQUEST}},
            },
        )
        for uri, action, description in (
            (DISABLE_TOOL_EXTENSION_URI, "disable", "Disable tools for a role."),
            (ENABLE_TOOL_EXTENSION_URI, "enable", "Enable tools for a role."),
        )
    ]
