"""The env clock (`urn:agentenv:clock/v1`): a virtual UTC time the gateway serves to agents.

Armed with a start time and a rate (virtual seconds per real second, 0 = frozen); reads derive
from a monotonic source, so between two arms the clock never runs backwards. Re-arming it, even
to an earlier time, re-anchors it (as the existing product does): `elapsed()` counts only the
virtual time that ran forward, a step back counts nothing.
"""

from __future__ import annotations

import functools
import math
import re
import threading
import time
import zoneinfo
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from agentenv_protocol.schema import did_you_mean

MAX_RATE = 86400.0
_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$"
)
_SHAPE = "YYYY-MM-DDThh:mm:ss[.ffffff](Z|+hh:mm), e.g. 2026-03-08T06:59:00Z"


class ClockError(ValueError):
    """A bad clock request; `status` is the HTTP status the gateway answers with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def iso(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_time(text: object) -> datetime:
    """An RFC 3339 timestamp with an explicit offset, as an aware UTC datetime."""
    if not isinstance(text, str):
        raise ClockError(
            f"virtual_time must be an RFC 3339 string ({_SHAPE}), got {type(text).__name__}"
        )
    if not _RFC3339.match(text):
        raise ClockError(f"invalid virtual_time {text!r}: expected {_SHAPE}")
    raw = text[:-1] + "+00:00" if text[-1] in "Zz" else text
    try:
        return datetime.fromisoformat(raw).astimezone(UTC)
    except (ValueError, OverflowError) as e:
        raise ClockError(f"invalid virtual_time {text!r}: {e}") from None


def parse_rate(value: object) -> float:
    if value is None:
        return 1.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ClockError(f"virtual_seconds_per_real_second must be a finite number, got {value!r}")
    if value < 0:
        raise ClockError(
            "virtual_seconds_per_real_second must be >= 0: the clock never runs backwards"
        )
    if value > MAX_RATE:
        raise ClockError(
            f"virtual_seconds_per_real_second {value:g} exceeds the maximum {MAX_RATE:g}"
        )
    return float(value)


@functools.lru_cache(maxsize=1)
def _zone_names() -> frozenset:
    return frozenset(zoneinfo.available_timezones())


def zone(name: object) -> zoneinfo.ZoneInfo:
    """The IANA zone `name`, or ClockError naming the closest known zone."""
    if not isinstance(name, str) or not name.strip():
        raise ClockError("time_zone must be an IANA zone name such as 'America/New_York'")
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ClockError(
            f"unknown time zone {name!r}{did_you_mean(name, _zone_names())}; "
            "use an IANA name such as 'America/New_York'"
        ) from None


class EnvClock:
    """Virtual time = t0 + (monotonic now - anchor) * rate; unarmed until `set_time`."""

    def __init__(self, now_fn: Callable[[], float] = time.monotonic) -> None:
        self._now = now_fn
        self._lock = threading.Lock()
        self._t0: datetime | None = None
        self._anchor = 0.0
        self._rate = 1.0
        self._elapsed = 0.0
        #: how many times `set_time` armed the clock (a re-arm re-anchors time triggers)
        self.arms = 0
        #: callables run after every arm and clear (the trigger engine wakes up on them)
        self.listeners: list[Callable[[], None]] = []

    @property
    def armed(self) -> bool:
        return self._t0 is not None

    def _current(self) -> datetime | None:
        if self._t0 is None:
            return None
        elapsed = max(0.0, self._now() - self._anchor)
        try:
            return self._t0 + timedelta(seconds=elapsed * self._rate)
        except OverflowError:
            return datetime.max.replace(tzinfo=UTC)

    def now(self) -> datetime | None:
        with self._lock:
            return self._current()

    def set_time(self, virtual_time: object, rate: object = None) -> dict:
        """Arm or re-arm the clock at `virtual_time` running at `rate`; an earlier time than the
        clock shows is allowed and re-anchors it (listeners hear of every arm)."""
        t0, r = parse_time(virtual_time), parse_rate(rate)
        with self._lock:
            self._elapsed += self._run_seconds()
            self._t0, self._anchor, self._rate = t0, self._now(), r
            self.arms += 1
        for listener in list(self.listeners):
            listener()
        return self.state()

    def elapsed(self) -> float:
        """Virtual seconds the clock ran forward over all arms since the last `clear()`."""
        with self._lock:
            return self._elapsed + self._run_seconds()

    def _run_seconds(self) -> float:
        """Virtual seconds the clock ran forward since it was last armed (0 when unarmed)."""
        t0, current = self._t0, self._current()
        return 0.0 if t0 is None or current is None else max(0.0, (current - t0).total_seconds())

    def clear(self) -> dict:
        with self._lock:
            self._t0, self._elapsed = None, 0.0
        for listener in list(self.listeners):
            listener()
        return {"ok": True, "armed": False}

    def read(self) -> dict:
        current = self.now()
        if current is None:
            raise ClockError("the clock is not armed (PUT /clock/set-time first)", 404)
        return {"virtual_time": iso(current)}

    def state(self) -> dict:
        with self._lock:
            t0, current = self._t0, self._current()
            if t0 is None or current is None:
                return {"armed": False}
            return {
                "armed": True,
                "t0": iso(t0),
                "virtual_seconds_per_real_second": self._rate,
                "virtual_time": iso(current),
            }

    def get_time(self, time_zone: object = None) -> dict:
        """The `get_time` tool's answer: `current_time` (UTC), plus `time_zone`/`local_time` if asked."""
        current = self.now()
        if current is None:
            raise ClockError("the environment clock is not set", 404)
        current = current.replace(microsecond=0)
        answer = {"current_time": iso(current)}
        if time_zone is not None:
            tz = zone(time_zone)
            answer["time_zone"] = str(time_zone)
            answer["local_time"] = current.astimezone(tz).isoformat()
        return answer


GET_TIME_TOOL = {
    "name": "get_time",
    "description": (
        "Returns the current date and time in this environment (UTC, and local time in an IANA time "
        "zone when `time_zone` is given). Your own machine's clock does not apply here: use this for "
        "every date or time you reason about or pass to another tool."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "time_zone": {
                "type": "string",
                "description": "IANA time zone name, e.g. 'America/New_York'",
            }
        },
        "additionalProperties": False,
    },
}
