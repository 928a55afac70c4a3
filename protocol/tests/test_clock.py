"""The env clock on its own: parsing, rates, monotonic reads, no rewinding, time zones."""

import pytest

from agentenv_protocol.gateway.clock import ClockError, EnvClock


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_time_advances_at_the_rate_and_freezes_at_zero():
    tick = FakeMonotonic()
    clock = EnvClock(now_fn=tick)
    assert clock.state() == {"armed": False}
    clock.set_time("2026-03-08T01:00:00-05:00", 60)
    tick.now += 2.5
    assert clock.read() == {"virtual_time": "2026-03-08T06:02:30Z"}
    clock.set_time("2026-03-08T06:02:30Z", 0)
    tick.now += 1000
    assert clock.read() == {"virtual_time": "2026-03-08T06:02:30Z"}


def test_reads_never_go_backwards_even_if_the_monotonic_source_misbehaves():
    tick = FakeMonotonic()
    clock = EnvClock(now_fn=tick)
    clock.set_time("2026-11-01T05:59:59Z", 1)
    tick.now -= 50  # an anchor newer than "now" must not move the clock back
    assert clock.read() == {"virtual_time": "2026-11-01T05:59:59Z"}


def test_rearming_earlier_is_allowed_and_counts_no_elapsed_time_back():
    tick = FakeMonotonic()
    clock = EnvClock(now_fn=tick)
    clock.set_time("2026-03-08T06:59:00Z", 60)
    tick.now += 30
    assert clock.read() == {"virtual_time": "2026-03-08T07:29:00Z"}
    arms = clock.arms
    state = clock.set_time("2026-03-08T06:00:00Z", 1)  # the existing product allows it
    assert state["virtual_time"] == "2026-03-08T06:00:00Z" and clock.arms == arms + 1
    assert clock.elapsed() == 1800.0  # one step back counts nothing
    tick.now += 10
    assert clock.elapsed() == 1810.0
    clock.clear()
    assert clock.state() == {"armed": False} and clock.elapsed() == 0.0


@pytest.mark.parametrize(
    "value, words",
    [
        ("2026-03-08", "expected YYYY-MM-DD"),
        ("2026-03-08T07:00Z", "expected"),
        ("tomorrow", "expected"),
        (1741417200, "RFC 3339 string"),
        ("2026-13-01T00:00:00Z", "month must be in 1..12"),
    ],
)
def test_malformed_times_are_clear_errors(value, words):
    with pytest.raises(ClockError, match=words):
        EnvClock().set_time(value)


@pytest.mark.parametrize("rate", [-1, float("nan"), "fast", True, 10**6])
def test_bad_rates_are_refused(rate):
    with pytest.raises(ClockError, match="virtual_seconds_per_real_second"):
        EnvClock().set_time("2026-01-01T00:00:00Z", rate)


def test_get_time_in_new_york_across_both_dst_changes():
    tick = FakeMonotonic()
    clock = EnvClock(now_fn=tick)
    with pytest.raises(ClockError, match="not set"):
        clock.get_time()
    clock.set_time("2026-03-08T06:59:59Z", 1)
    assert clock.get_time("America/New_York")["local_time"] == "2026-03-08T01:59:59-05:00"
    tick.now += 1
    assert clock.get_time("America/New_York") == {
        "current_time": "2026-03-08T07:00:00Z",
        "time_zone": "America/New_York",
        "local_time": "2026-03-08T03:00:00-04:00",
    }
    clock.set_time("2026-11-01T05:59:59Z", 1)
    assert clock.get_time("America/New_York")["local_time"] == "2026-11-01T01:59:59-04:00"
    tick.now += 1
    assert clock.get_time("America/New_York")["local_time"] == "2026-11-01T01:00:00-05:00"
    with pytest.raises(ClockError, match="did you mean 'Europe/London'"):
        clock.get_time("Europe/Londn")
    with pytest.raises(ClockError, match="IANA"):
        clock.get_time("")
