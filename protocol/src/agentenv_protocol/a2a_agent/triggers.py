"""The agent side of triggers/v1: turn-based triggers an orchestrator registers and then asks,
turn by turn, what to do (`decide`).

A trigger is `{id, when: {type: "step", turn, cmp?}, actions: [...]}`: it fires once per
context at turn `turn` (`cmp` "eq", the default, or "gte": at that turn or any later one).
Actions are `{type: "say", text}` (a text part to send) and `{type: "end"}` (the conversation
is done). Bad input is refused whole with a message naming the trigger and field.
"""

from __future__ import annotations

import collections
from typing import Any

from pydantic import BaseModel, ConfigDict

MAX_TRIGGERS = 256
MAX_LOG_ENTRIES = 1000
WHEN_TYPES = ("step",)
ACTION_TYPES = ("say", "end")


class TriggerRegisterRequest(BaseModel):
    """The body of triggers/v1 `register`."""

    model_config = ConfigDict(extra="forbid")
    triggers: list[dict[str, Any]]


class TriggerDecideRequest(BaseModel):
    """The body of triggers/v1 `decide`: the turn about to be taken, in which context."""

    model_config = ConfigDict(extra="forbid")
    turn: int
    context_id: str | None = None


def _check(trigger: Any, index: int, seen: set[str]) -> dict[str, Any]:
    where = f"triggers[{index}]"
    if not isinstance(trigger, dict):
        raise ValueError(f"{where} must be an object")
    unknown = set(trigger) - {"id", "when", "actions", "description"}
    if unknown:
        raise ValueError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    tid = trigger.get("id")
    if not isinstance(tid, str) or not tid:
        raise ValueError(f"{where}.id must be a non-empty string")
    if tid in seen:
        raise ValueError(f"{where}: trigger id {tid!r} is registered twice")
    when = trigger.get("when")
    if not isinstance(when, dict) or when.get("type") not in WHEN_TYPES:
        got = when.get("type") if isinstance(when, dict) else when
        raise ValueError(f"{where}.when.type must be one of {list(WHEN_TYPES)}; got {got!r}")
    turn = when.get("turn")
    if not isinstance(turn, int) or isinstance(turn, bool) or turn < 1:
        raise ValueError(f"{where}.when.turn must be an integer >= 1")
    if when.get("cmp", "eq") not in ("eq", "gte"):
        raise ValueError(f"{where}.when.cmp must be 'eq' or 'gte'")
    actions = trigger.get("actions")
    if not isinstance(actions, list) or not actions:
        raise ValueError(f"{where}.actions must be a non-empty list")
    for n, action in enumerate(actions):
        kind = action.get("type") if isinstance(action, dict) else None
        if kind not in ACTION_TYPES:
            raise ValueError(
                f"{where}.actions[{n}].type must be one of {list(ACTION_TYPES)}; got {kind!r}"
            )
        if kind == "say" and not isinstance(action.get("text"), str):
            raise ValueError(f"{where}.actions[{n}].text must be a string")
    return trigger


class TriggerEngine:
    """The registered triggers and what fired, per context."""

    def __init__(self) -> None:
        self.triggers: dict[str, dict[str, Any]] = {}
        self.fired: dict[str | None, set[str]] = {}
        self.log: collections.deque[dict[str, Any]] = collections.deque(maxlen=MAX_LOG_ENTRIES)

    def register(self, body: dict[str, Any]) -> dict[str, Any]:
        items = body.get("triggers")
        if not isinstance(items, list) or not items:
            raise ValueError("'triggers' must be a non-empty list")
        seen = set(self.triggers)
        checked = []
        for index, trigger in enumerate(items):
            checked.append(_check(trigger, index, seen))
            seen.add(trigger["id"])
        if len(seen) > MAX_TRIGGERS:
            raise ValueError(f"at most {MAX_TRIGGERS} triggers may be registered")
        for trigger in checked:
            self.triggers[trigger["id"]] = trigger
            self.log.append({"kind": "registered", "trigger_id": trigger["id"]})
        return {"status": "registered", "triggers": len(self.triggers)}

    def decide(self, turn: int, context_id: str | None = None) -> dict[str, Any]:
        fired_here = self.fired.setdefault(context_id, set())
        parts: list[dict[str, Any]] = []
        done, fired = False, []
        for tid, trigger in self.triggers.items():
            when = trigger["when"]
            due = turn >= when["turn"] if when.get("cmp") == "gte" else turn == when["turn"]
            if not due or tid in fired_here:
                continue
            fired_here.add(tid)
            fired.append(tid)
            for action in trigger["actions"]:
                if action["type"] == "say":
                    parts.append({"kind": "text", "text": action["text"]})
                else:
                    done = True
            self.log.append(
                {"kind": "fired", "trigger_id": tid, "turn": turn, "context_id": context_id}
            )
        return {"parts": parts, "done": done, "fired": fired}

    def state(self) -> dict[str, Any]:
        return {"triggers": list(self.triggers.values()), "firing_log": list(self.log)}
