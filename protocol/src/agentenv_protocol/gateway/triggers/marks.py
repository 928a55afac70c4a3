"""Where a time trigger's marks fall on the virtual clock."""

from __future__ import annotations

from datetime import datetime

from agentenv_protocol.gateway.clock import parse_time
from agentenv_protocol.gateway.triggers.durations import is_duration, parse_duration
from agentenv_protocol.gateway.triggers.model import Trigger


def first_mark(trigger: Trigger, t0: datetime, triggers: dict[str, Trigger]) -> datetime | None:
    """The trigger's first mark: `at` (absolute, or after t0), `after` another's firing, or one `every`."""
    when = trigger.when
    if "after" in when:
        other = triggers.get(when["after"])
        if other is None or other.fired_virtual is None:
            return None
        return parse_time(other.fired_virtual) + parse_duration(
            when.get("offset", "PT0S"), "offset", positive=False
        )
    if "at" in when:
        at = when["at"]
        if is_duration(at):
            return t0 + parse_duration(at, "at", positive=False)
        return parse_time(at)
    assert trigger.every is not None
    return t0 + trigger.every.draw()


def relative(trigger: Trigger) -> bool:
    """Whether the marks count from the clock's t0 (so a re-arm re-anchors them)."""
    when = trigger.when
    return not ("after" in when or ("at" in when and not is_duration(when["at"])))


def exhausted(trigger: Trigger, mark: datetime) -> bool:
    """Whether `count` or `until` ends the series before `mark`."""
    when = trigger.when
    if when.get("count") is not None and trigger.marks >= when["count"]:
        return True
    return "until" in when and mark > parse_time(when["until"])
