"""Newcombe's interval for the change in pass rate (what `runs compare` quotes), against the
published figures. Moved from kernel/tests/reporting/test_stats.py with the function."""

from __future__ import annotations

import pytest

from agentenv_reporting.compare import difference_interval


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # Newcombe (1998), Statistics in Medicine 17:873, table II, method 10 (p_b - p_a here)
        ((48, 80), (56, 70), (0.0524, 0.3339)),
        ((0, 20), (0, 10), (-0.1611, 0.2775)),
        ((0, 20), (10, 10), (0.6791, 1.0)),
    ],
)
def test_difference_interval_matches_newcombe(a, b, expected) -> None:
    low, high = difference_interval(*a, *b)
    assert (round(low, 4), round(high, 4)) == expected


def test_difference_interval_needs_trials_on_both_sides() -> None:
    assert difference_interval(0, 0, 3, 4) is None
