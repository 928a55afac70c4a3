"""ISO 8601 durations (`PT1H`, `P1DT30M`, `PT0.5S`) and random spans (`{dist: exp, mean, seed}`)."""

from __future__ import annotations

import random
import re
from datetime import timedelta
from typing import Any

from agentenv_protocol.gateway.triggers.errors import TriggerError

_DURATION = re.compile(
    r"^P(?:(?P<w>\d+)W)?(?:(?P<d>\d+)D)?"
    r"(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)


def parse_duration(value: Any, where: str, *, positive: bool = True) -> timedelta:
    """An ISO 8601 duration as a timedelta; TriggerError naming `where` otherwise."""
    match = _DURATION.match(value) if isinstance(value, str) else None
    if match is None or value in ("P", "PT") or value.endswith("T"):
        raise TriggerError(f"{where} must be an ISO 8601 duration such as 'PT1H', got {value!r}")
    parts = {k: float(v) for k, v in match.groupdict().items() if v}
    span = timedelta(
        weeks=parts.get("w", 0),
        days=parts.get("d", 0),
        hours=parts.get("h", 0),
        minutes=parts.get("m", 0),
        seconds=parts.get("s", 0),
    )
    if positive and span <= timedelta(0):
        raise TriggerError(f"{where} must be a positive duration, got {value!r}")
    return span


def is_duration(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("P")


class Span:
    """A fixed duration, or exponentially distributed spans drawn from a seeded generator."""

    def __init__(self, value: Any, where: str) -> None:
        self.fixed: timedelta | None = None
        self.mean = 0.0
        if isinstance(value, dict):
            unknown = sorted(set(value) - {"dist", "mean", "seed"})
            if unknown or value.get("dist") != "exp":
                raise TriggerError(
                    f"{where} must be a duration or {{dist: 'exp', mean, seed}}, got {value!r}"
                )
            seed = value.get("seed")
            if isinstance(seed, bool) or not isinstance(seed, int):
                raise TriggerError(f"{where}.seed must be an integer, got {seed!r}")
            mean = value.get("mean")
            self.mean = parse_duration(mean, f"{where}.mean").total_seconds()
            self._random = random.Random(seed)
        else:
            self.fixed = parse_duration(value, where)

    def draw(self) -> timedelta:
        if self.fixed is not None:
            return self.fixed
        return timedelta(seconds=max(0.001, self._random.expovariate(1.0 / self.mean)))
