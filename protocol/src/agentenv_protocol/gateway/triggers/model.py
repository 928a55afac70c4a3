"""The runtime state of a registered trigger, and of one firing in progress."""

from __future__ import annotations

from datetime import datetime

from agentenv_protocol.gateway.clock import iso
from agentenv_protocol.gateway.triggers.durations import Span


class Trigger:
    """One registered trigger and its runtime state."""

    def __init__(self, spec: dict) -> None:
        self.spec = spec
        self.id: str = spec["id"]
        self.when: dict = spec["when"]
        self.kind: str = self.when["type"]
        self.status = "armed"
        self.detected_at: str | None = None
        self.fired_at: str | None = None
        self.fired_virtual: str | None = None
        self.fire_count = 0
        self.failure_count = 0
        self.last_failure_at: str | None = None
        self.pending = 0
        self.next_mark: datetime | None = None
        self.marks = 0
        self.anchored_arm: int | None = None
        self.every = Span(self.when["every"], "when.every") if "every" in self.when else None

    def summary(self) -> dict:
        keys = ("type", "tool", "at", "after", "offset", "every", "count", "until")
        return {k: self.when[k] for k in keys if k in self.when}

    def describe(self) -> dict:
        return {
            "id": self.id,
            "type": self.kind,
            "when": self.summary(),
            "status": self.status,
            "detected_at": self.detected_at,
            "fired_at": self.fired_at,
            "fire_count": self.fire_count,
            "failure_count": self.failure_count,
            "last_failure_at": self.last_failure_at,
            "barrier": None,
            "pending": self.pending,
            "waiting": self.pending > 0,
            "next_mark": iso(self.next_mark) if self.next_mark else None,
        }

    RUNTIME = (
        "status",
        "detected_at",
        "fired_at",
        "fired_virtual",
        "fire_count",
        "failure_count",
        "last_failure_at",
        "marks",
    )


class Job:
    """One firing in progress: the actions left, their scope, and when it may go on."""

    def __init__(self, trigger: Trigger, scope: dict, due: datetime | None, detail: dict) -> None:
        self.trigger = trigger
        self.scope = scope
        self.index = 0
        self.due = due
        self.delayed_index = -1
        self.detail = detail
