"""Per-role tool rules: which exposed tools each role (or every role, `*`) may see and call."""

from __future__ import annotations

from collections.abc import Iterable

from agentenv_protocol.gateway.errors import WILDCARD, GatewayError
from agentenv_protocol.schema import did_you_mean


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
        disabled = not enabled
        for tool in targets:
            if role == WILDCARD and tool == WILDCARD:
                self.rules = {WILDCARD: {WILDCARD: disabled}}
            elif role == WILDCARD:
                for rules in self.rules.values():
                    rules[tool] = disabled
                self.rules.setdefault(WILDCARD, {})[tool] = disabled
            elif tool == WILDCARD:
                self.rules[role] = {WILDCARD: disabled}
            else:
                self.rules.setdefault(role, {})[tool] = disabled
        return self.describe()

    def describe(self) -> dict:
        return {
            role: {
                "disabled": sorted(t for t, v in rules.items() if v),
                "enabled": sorted(t for t, v in rules.items() if not v),
            }
            for role, rules in self.rules.items()
        }

    def is_disabled(self, role: str, tool: str) -> bool:
        for r in (role, WILDCARD):
            rules = self.rules.get(r)
            if rules:
                if tool in rules:
                    return rules[tool]
                if WILDCARD in rules:
                    return rules[WILDCARD]
        return False
