"""Executor working hours: the existing product's table for 09:00-17:00 Mon-Fri, windows past
midnight, and every refusal."""

from __future__ import annotations

from datetime import datetime

import pytest

from agentenv_protocol.gateway.triggers.errors import TriggerError
from agentenv_protocol.gateway.triggers.hours import next_opening, normalize_hours

WEEK = ["fri", "mon", "tue", "wed", "thu"]  # normalised to week order
NY = {"start": "09:00", "end": "17:00", "days": WEEK, "time_zone": "America/New_York"}
EST = {"start": "09:00", "end": "17:00", "days": WEEK, "utc_offset": "-05:00"}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def opening(hours: dict, now: str) -> str | None:
    found = next_opening(normalize_hours(hours), at(now))
    return None if found is None else found.strftime("%Y-%m-%dT%H:%MZ")


@pytest.mark.parametrize(
    "now, in_zone, fixed",
    [
        ("2026-03-08T06:59Z", "2026-03-09T13:00Z", "2026-03-09T14:00Z"),  # Sunday, the DST day
        ("2026-03-09T13:30Z", None, "2026-03-09T14:00Z"),
        ("2026-03-06T21:59Z", None, None),  # Fri 16:59 EST
        ("2026-03-06T22:30Z", "2026-03-09T13:00Z", "2026-03-09T14:00Z"),
    ],
)
def test_local_hours_hold_across_dst_and_fixed_offsets_do_not(now, in_zone, fixed):
    assert opening(NY, now) == in_zone
    assert opening(EST, now) == fixed


def test_days_are_normalised_and_a_window_may_run_past_midnight():
    assert normalize_hours(NY)["days"] == ["mon", "tue", "wed", "thu", "fri"]
    night = {"start": "22:00", "end": "06:00"}
    assert normalize_hours(night)["utc_offset"] == "+00:00"
    assert opening(night, "2026-03-08T23:00Z") is None
    assert opening(night, "2026-03-08T05:59Z") is None
    assert opening(night, "2026-03-08T07:00Z") == "2026-03-08T22:00Z"


@pytest.mark.parametrize(
    "hours, words",
    [
        ({"start": "9:00", "end": "17:00"}, "executor.hours.start must be a 24-hour 'HH:MM'"),
        (
            {"start": "09:00", "end": "09:00"},
            "start equals end, so the executor would never be available",
        ),
        (
            {"start": "09:00", "end": "17:00", "utc_offset": "+5:30"},
            "must look like '-07:00' or '+05:30'",
        ),
        (
            {"start": "09:00", "end": "17:00", "utc_offset": "+00:00", "time_zone": "UTC"},
            "take utc_offset or time_zone, not both",
        ),
        (
            {"start": "09:00", "end": "17:00", "time_zone": "Mars/Base"},
            "must be an IANA time zone name such as 'America/New_York', got 'Mars/Base'",
        ),
        (
            {"start": "09:00", "end": "17:00", "days": ["monday"]},
            "must be a non-empty list of ['mon'",
        ),
    ],
)
def test_bad_hours_are_refused_with_the_field(hours, words):
    with pytest.raises(TriggerError) as err:
        normalize_hours(hours)
    assert words in str(err.value)
