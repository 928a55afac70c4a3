"""Executor working hours: when an executor may act, in a fixed UTC offset or an IANA zone.

`normalize_hours` checks and normalises `{start, end, days?, utc_offset? | time_zone?}`;
`next_opening(hours, now)` is None while open, else the next opening (UTC). With `time_zone`
local hours hold across DST; with `utc_offset` they are fixed. A window with end < start runs
past midnight.
"""

from __future__ import annotations

import re
import zoneinfo
from datetime import UTC, datetime, time, timedelta, timezone, tzinfo
from typing import Any

from agentenv_protocol.gateway.triggers.errors import TriggerError

DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
_HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
_OFFSET = re.compile(r"^([+-])(\d{2}):(\d{2})$")


def _clock_time(where: str, value: Any) -> str:
    if not isinstance(value, str) or not _HHMM.match(value):
        raise TriggerError(f"{where} must be a 24-hour 'HH:MM', got {value!r}")
    return value


def normalize_hours(hours: Any, where: str = "executor.hours") -> dict:
    """The checked hours with `days` in week order and a default `utc_offset` of +00:00."""
    if not isinstance(hours, dict):
        raise TriggerError(
            f"{where} must be an object {{start, end, days?, utc_offset?|time_zone?}}"
        )
    unknown = sorted(set(hours) - {"start", "end", "days", "utc_offset", "time_zone"})
    if unknown:
        raise TriggerError(
            f"{where}: unknown key {unknown[0]!r} (known: start, end, days, utc_offset, time_zone)"
        )
    start = _clock_time(f"{where}.start", hours.get("start"))
    end = _clock_time(f"{where}.end", hours.get("end"))
    if start == end:
        raise TriggerError(f"{where}: start equals end, so the executor would never be available")
    days = hours.get("days", DAYS)
    if (
        not isinstance(days, list)
        or not days
        or not all(isinstance(d, str) and d.lower() in DAYS for d in days)
    ):
        raise TriggerError(f"{where}.days must be a non-empty list of {DAYS}, got {days!r}")
    wanted = {d.lower() for d in days}
    out: dict[str, Any] = {"start": start, "end": end, "days": [d for d in DAYS if d in wanted]}
    if "utc_offset" in hours and "time_zone" in hours:
        raise TriggerError(f"{where}: take utc_offset or time_zone, not both")
    if "time_zone" in hours:
        name = hours["time_zone"]
        _zone(name, where)
        out["time_zone"] = name
    else:
        offset = hours.get("utc_offset", "+00:00")
        _offset(offset, where)
        out["utc_offset"] = offset
    return out


def _zone(name: Any, where: str) -> tzinfo:
    try:
        if not isinstance(name, str) or not name:
            raise ValueError
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise TriggerError(
            f"{where}.time_zone must be an IANA time zone name such as 'America/New_York', "
            f"got {name!r}"
        ) from None


def _offset(value: Any, where: str) -> tzinfo:
    match = _OFFSET.match(value) if isinstance(value, str) else None
    if match is None or int(match.group(2)) > 14 or int(match.group(3)) > 59:
        raise TriggerError(f"{where}.utc_offset must look like '-07:00' or '+05:30', got {value!r}")
    sign = -1 if match.group(1) == "-" else 1
    return timezone(sign * timedelta(hours=int(match.group(2)), minutes=int(match.group(3))))


def _tz(hours: dict) -> tzinfo:
    if "time_zone" in hours:
        return _zone(hours["time_zone"], "hours")
    return _offset(hours.get("utc_offset", "+00:00"), "hours")


def _windows(hours: dict, tz: tzinfo, around: datetime) -> list[tuple[datetime, datetime]]:
    """The open windows (UTC) that start on the local days around `around`."""
    start = time.fromisoformat(hours["start"])
    end = time.fromisoformat(hours["end"])
    local_day = around.astimezone(tz).date()
    windows = []
    for shift in range(-1, 9):
        day = local_day + timedelta(days=shift)
        if DAYS[day.weekday()] not in hours["days"]:
            continue
        opens = datetime.combine(day, start, tzinfo=tz)
        closes_day = day + timedelta(days=1) if end < start else day
        closes = datetime.combine(closes_day, end, tzinfo=tz)
        windows.append((opens.astimezone(UTC), closes.astimezone(UTC)))
    return windows


def next_opening(hours: dict, now: datetime) -> datetime | None:
    """None when `now` is inside the hours, else the next time (UTC) they open."""
    tz = _tz(hours)
    now = now.astimezone(UTC)
    later = []
    for opens, closes in _windows(hours, tz, now):
        if opens <= now < closes:
            return None
        if opens > now:
            later.append(opens)
    return min(later) if later else None
