"""Per-role tool rules: which exposed tools each role (or every role, `*`) may see and call."""

from __future__ import annotations

from collections.abc import Iterable

from agentenv_protocol.gateway.errors import WILDCARD, GatewayError
from agentenv_protocol.schema import did_you_mean
from agentenv_protocol.tool_access import apply_rule, rule_disables


class RoleRules:
    """`rules[role][tool] = disabled`; an exact tool rule beats the role's `*`, a role's rules beat `*`'s."""

    def __init__(self) -> None:
        self.rules: dict[str, dict[str, bool]] = {}

    def set(
        self, role: str, tools: list[str] | str, *, enabled: bool, known: Iterable[str]
    ) -> dict:
        """Enable or disable `tools` (or `*`) for `role` (or `*`); unknown tool names raise GatewayError."""
        targets = [WILDCARD] if tools == WILDCARD else list(tools)
        known = set(known)
        for tool in targets:
            if tool != WILDCARD and tool not in known:
                raise GatewayError(f"unknown tool {tool!r}{did_you_mean(tool, known)}")
        for tool in targets:
            apply_rule(self.rules, role, tool, not enabled)
        return self.describe()

    def describe(self) -> dict:
        return {
            role: {
                "disabled": sorted(t for t, v in rules.items() if v),
                "enabled": sorted(t for t, v in rules.items() if not v),
            }
            for role, rules in self.rules.items()
        }

    def is_disabled(self, role: str, tool: str, hidden: bool = False) -> bool:
        """A tool `hidden` by default stays disabled until a rule names it."""
        return rule_disables(self.rules, role, tool, hidden)
