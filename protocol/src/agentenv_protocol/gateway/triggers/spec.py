"""Checking trigger specs `{id?, when, actions, barrier?}` at registration, so a bad spec is a
400 naming the field instead of a failure in the middle of the agent's turn."""

from __future__ import annotations

import re
import secrets
from collections.abc import Collection
from typing import Any

from agentenv_protocol.gateway.clock import ClockError, parse_time
from agentenv_protocol.gateway.triggers.durations import Span, is_duration, parse_duration
from agentenv_protocol.gateway.triggers.errors import TriggerError
from agentenv_protocol.gateway.triggers.templates import placeholders
from agentenv_protocol.schema import did_you_mean

WHEN_TYPES = ("action", "time")
#: trigger kinds the existing product has and this engine does not serve yet
UNSUPPORTED_WHEN = ("state", "website")
ACTION_TYPES = ("tool", "nl", "permission")
PREDICATE_KEYS = ("regex", "equals", "exists")
_ID = re.compile(r"^[A-Za-z0-9_.:\-]{1,128}$")


def _keys(obj: dict, allowed: Collection[str], where: str) -> None:
    for key in obj:
        if key not in allowed:
            raise TriggerError(
                f"{where}: unknown key {key!r}{did_you_mean(key, allowed)} "
                f"(known: {', '.join(allowed)})"
            )


def _roles(value: Any, where: str) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(r, str) and r for r in value):
        raise TriggerError(f"{where} must be a non-empty list of role names, got {value!r}")
    return value


def check_predicate(pred: Any, where: str) -> None:
    if not isinstance(pred, dict) or len(pred) != 1 or next(iter(pred)) not in PREDICATE_KEYS:
        raise TriggerError(
            f"{where} must be exactly one of {{regex}}, {{equals}} or {{exists}}, got {pred!r}"
        )
    if "regex" in pred:
        try:
            re.compile(pred["regex"])
        except (re.error, TypeError) as e:
            raise TriggerError(f"{where}.regex is not a valid regular expression: {e}") from None
    if "exists" in pred and not isinstance(pred["exists"], bool):
        raise TriggerError(f"{where}.exists must be true or false")


def _where(value: Any, where: str) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise TriggerError(f"{where} must be an object of field -> predicate")
    for field, pred in value.items():
        check_predicate(pred, f"{where}.{field}")


def _tool(value: Any, where: str, known_tools: Collection[str] | None) -> None:
    if not isinstance(value, str) or not value:
        raise TriggerError(f"{where} must name a tool")
    if known_tools is not None and value not in known_tools:
        raise TriggerError(
            f"{where} names unknown tool {value!r}{did_you_mean(value, known_tools)}"
        )


def _time(when: dict, ids: Collection[str]) -> None:
    _keys(when, ("type", "at", "after", "offset", "every", "count", "until", "unless"), "when")
    if "at" in when and "after" in when:
        raise TriggerError("when: take at or after, not both")
    if not ({"at", "after", "every"} & set(when)):
        raise TriggerError("a time trigger needs when.at, when.after or when.every")
    if "at" in when:
        if is_duration(when["at"]):
            parse_duration(when["at"], "when.at", positive=False)
        else:
            try:
                parse_time(when["at"])
            except ClockError as e:
                raise TriggerError(
                    f"when.at: {e} (or an ISO duration after the clock's t0)"
                ) from None
    if "after" in when:
        if not isinstance(when["after"], str) or when["after"] not in ids:
            raise TriggerError(
                f"when.after names no registered trigger {when['after']!r}"
                f"{did_you_mean(str(when['after']), ids)}"
            )
        parse_duration(when.get("offset", "PT0S"), "when.offset", positive=False)
    elif "offset" in when:
        raise TriggerError("when.offset goes with when.after")
    if "every" in when:
        Span(when["every"], "when.every")
    count = when.get("count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise TriggerError(f"when.count must be a positive integer, got {count!r}")
    if "until" in when:
        try:
            parse_time(when["until"])
        except ClockError as e:
            raise TriggerError(f"when.until: {e}") from None
    if "unless" in when:
        if "every" in when:
            raise TriggerError("when.unless makes a one-shot trigger a deadline; it cannot recur")
        unless = when["unless"]
        if not isinstance(unless, dict):
            raise TriggerError("when.unless must be {tool, where?, roles?}")
        _keys(unless, ("tool", "where", "roles"), "when.unless")
        _where(unless.get("where"), "when.unless.where")
        _roles(unless.get("roles"), "when.unless.roles")


def _action(
    action: Any, where: str, known_tools: Collection[str] | None, executors: Collection[str]
) -> None:
    if not isinstance(action, dict):
        raise TriggerError(f"{where} must be an object")
    kind = action.get("type")
    if kind not in ACTION_TYPES:
        raise TriggerError(
            f"{where}.type must be one of {', '.join(ACTION_TYPES)}, got {kind!r}"
            f"{did_you_mean(str(kind), ACTION_TYPES)}"
        )
    if "verify" in action:
        raise TriggerError(f"{where}.verify is not supported by this gateway yet")
    if "delay" in action:
        Span(action["delay"], f"{where}.delay")
    if kind == "tool":
        _keys(action, ("type", "tool", "args", "as", "delay"), where)
        _tool(action.get("tool"), f"{where}.tool", known_tools)
        if not isinstance(action.get("args", {}), dict):
            raise TriggerError(f"{where}.args must be an object")
    elif kind == "nl":
        _keys(action, ("type", "instruction", "executor", "delay"), where)
        text = action.get("instruction")
        if not isinstance(text, str) or not text.strip():
            raise TriggerError(f"{where}.instruction must be a non-empty string")
        if placeholders(text):
            raise TriggerError(
                f"{where}.instruction is never templated; remove ${{{placeholders(text)[0]}}}"
            )
        name = action.get("executor", "default")
        if name not in executors:
            raise TriggerError(
                f"{where} needs an executor: "
                + (
                    f"no executor {name!r} is configured{did_you_mean(str(name), executors)}"
                    if executors
                    else "register with an executor (executor_agent_name) first"
                )
            )
    else:
        _keys(action, ("type", "action", "role", "tools"), where)
        if action.get("action") not in ("enable", "disable"):
            raise TriggerError(f"{where}.action must be enable or disable")
        if not isinstance(action.get("role"), str) or not action["role"]:
            raise TriggerError(f"{where}.role must be a role name")
        tools = action.get("tools")
        if tools != "*" and not (isinstance(tools, list) and tools):
            raise TriggerError(f"{where}.tools must be a list of tool names or '*'")
        for i, tool in enumerate([] if tools == "*" else tools):
            _tool(tool, f"{where}.tools[{i}]", known_tools)


def check_spec(
    spec: Any,
    *,
    ids: Collection[str],
    known_tools: Collection[str] | None,
    executors: dict[str, dict],
) -> dict:
    """`spec` with its id filled in (`trg_<12 hex>` when missing); TriggerError otherwise."""
    if not isinstance(spec, dict):
        raise TriggerError(f"a trigger must be an object, got {type(spec).__name__}")
    spec = dict(spec)
    tid = spec.setdefault("id", f"trg_{secrets.token_hex(6)}")
    where = f"trigger {tid!r}"
    if not isinstance(tid, str) or not _ID.match(tid):
        raise TriggerError(f"trigger id {tid!r}: use letters, digits and . _ : -")
    try:
        _keys(spec, ("id", "when", "actions", "barrier"), "trigger")
        if spec.get("barrier") is not None:
            raise TriggerError("barrier is not supported by this gateway yet")
        when = spec.get("when")
        if not isinstance(when, dict):
            raise TriggerError("when must be an object with a type")
        kind = when.get("type")
        if kind in UNSUPPORTED_WHEN:
            raise TriggerError(f"when.type {kind!r} is not supported by this gateway yet")
        if kind not in WHEN_TYPES:
            raise TriggerError(
                f"when.type must be one of {', '.join(WHEN_TYPES)}, got {kind!r}"
                f"{did_you_mean(str(kind), WHEN_TYPES)}"
            )
        if kind == "action":
            _keys(when, ("type", "tool", "where", "repeat", "roles"), "when")
            _tool(when.get("tool"), "when.tool", known_tools)
            _where(when.get("where"), "when.where")
            if not isinstance(when.get("repeat", False), bool):
                raise TriggerError("when.repeat must be true or false")
            roles = _roles(when.get("roles"), "when.roles")
        else:
            _time(when, ids)
            roles = None
        actions = spec.get("actions")
        if not isinstance(actions, list) or not actions:
            raise TriggerError("actions must be a non-empty list")
        for i, action in enumerate(actions):
            _action(action, f"actions[{i}]", known_tools, executors)
            if roles and action.get("type") == "nl":
                role = executors[action.get("executor", "default")].get("role")
                if role in roles:
                    raise TriggerError(
                        f"actions[{i}]: the executor's role {role!r} is in when.roles, so its "
                        "own calls would provoke the trigger again (a loop)"
                    )
    except TriggerError as e:
        raise TriggerError(f"{where}: {e}") from None
    return spec
