"""pass@k, the Wilson and t intervals, and run results, against hand computations."""

from __future__ import annotations

import math

import pytest

from agent_env.engine.outcome import failure_class, step_failure_class
from agent_env.engine.records import TaskInstanceRecord
from agent_env.reporting.results import Results, format_table, shown_ks
from agent_env.reporting.stats import (
    Moments,
    pass_at_k,
    t_quantile_975,
    wilson_interval,
)


def test_pass_at_k_matches_the_combinatorial_definition():
    # n=5 trials, c=2 passes. pass@1 = c/n; pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10;
    # pass@3 = 1 - C(3,3)/C(5,3) = 1 - 1/10; pass@4 = 1 (only 3 failures to draw from).
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k(5, 2, 3) == pytest.approx(0.9)
    assert pass_at_k(5, 2, 4) == 1.0
    assert pass_at_k(5, 0, 5) == 0.0
    assert pass_at_k(10, 10, 1) == 1.0
    # n=10, c=3, k=5: 1 - C(7,5)/C(10,5) = 1 - 21/252
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)


def test_pass_at_k_rejects_impossible_inputs():
    for n, c, k in ((5, 6, 1), (5, 2, 0), (5, 2, 6), (5, -1, 1)):
        with pytest.raises(ValueError):
            pass_at_k(n, c, k)


def test_wilson_interval_by_hand():
    # 8 passes of 10, z = 1.96: center = (0.8 + 1.96^2/20) / (1 + 1.96^2/10)
    z = 1.959963984540054
    p, n = 0.8, 10
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo, hi = wilson_interval(8, 10)
    assert (lo, hi) == pytest.approx((center - half, center + half))
    assert (round(lo, 4), round(hi, 4)) == (0.4902, 0.9433)  # the textbook values
    # all passes: the upper bound is 1 and the lower bound is n / (n + z^2)
    lo, hi = wilson_interval(20, 20)
    assert hi == pytest.approx(1.0) and lo == pytest.approx(20 / (20 + z * z))
    assert wilson_interval(0, 0) is None


def test_t_interval_by_hand():
    values = [0.0, 0.5, 1.0, 1.0]
    m = Moments()
    for v in values:
        m.add(v)
    mean = sum(values) / 4  # 0.625
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 3)  # sample sd, n - 1
    half = 3.1824 * sd / 2  # t_{0.975, 3} = 3.1824; sqrt(4) = 2
    assert m.mean == pytest.approx(0.625)
    assert mean - half < 0 and mean + half > 1  # what the raw t interval says at n = 4
    assert m.interval() == pytest.approx((0.0, 1.0), abs=1e-4)  # a mean score stays in [0, 1]
    narrow = Moments()
    for v in [0.4, 0.5, 0.6]:
        narrow.add(v)
    half = 4.3027 * 0.1 / math.sqrt(3)  # sd 0.1, t_{0.975, 2}
    assert narrow.interval() == pytest.approx((0.5 - half, 0.5 + half), abs=1e-4)
    wide = Moments()  # scores outside [0, 1]: the range widens to the values seen
    for v in [2.0, 4.0]:
        wide.add(v)
    lo, hi = wide.interval()
    assert (lo, hi) == (0.0, 4.0)
    merged = Moments()
    merged.merge(narrow)
    merged.merge(wide)
    assert (merged.lo, merged.hi) == (0.4, 4.0)
    single = Moments()
    single.add(1.0)
    assert single.interval() is None


def test_t_quantiles_and_merge():
    assert t_quantile_975(1) == pytest.approx(12.706, abs=1e-3)
    assert t_quantile_975(10) == pytest.approx(2.228, abs=1e-3)
    assert t_quantile_975(60) == pytest.approx(2.000, abs=1e-3)
    assert t_quantile_975(120) == pytest.approx(1.980, abs=1e-3)
    assert t_quantile_975(10_000) == pytest.approx(1.960, abs=1e-3)
    a, b, both = Moments(), Moments(), Moments()
    for i, v in enumerate([0.1, 0.9, 0.4, 0.7, 0.3]):
        (a if i < 2 else b).add(v)
        both.add(v)
    a.merge(b)
    assert (a.n, a.mean, a.m2) == pytest.approx((both.n, both.mean, both.m2))


def record(
    task: str, status: str, score: float | None = None, cls: str | None = None
) -> TaskInstanceRecord:
    return TaskInstanceRecord.from_dict(
        {
            "id": f"ti-{task}",
            "run_id": "run-x",
            "task": {"name": task},
            "status": status,
            "scores": {} if score is None else {"v": score},
            "failure": {"class": cls} if cls else None,
            "failure_class": failure_class(status, {"class": cls} if cls else None),
            "seconds": 1.0,
        }
    )


def test_results_per_task_and_per_eval():
    res = Results(["a", "b"], {"both": ["a", "b"]})
    # task a: 3 passes of 4 counted trials (scores 1, 1, 1, 0.5); an infrastructure failure
    # and a cancelled trial are excluded.
    for r in (
        record("a", "passed", 1.0),
        record("a", "passed", 1.0),
        record("a", "passed", 1.0),
        record("a", "scored_below", 0.5),
        record("a", "failed", cls="infrastructure"),
        record("a", "cancelled"),
    ):
        res.add(r)
    # task b: 1 pass of 4 (an agent failure scores 0; an unscored trial has no score)
    for r in (
        record("b", "passed", 1.0),
        record("b", "failed", cls="agent"),
        record("b", "unscored"),
        record("b", "failed", cls="timeout"),
    ):
        res.add(r)
    summary = res.summary()
    a, b = summary["tasks"]
    assert (a["trials"], a["passed"], a["pass_rate"]) == (4, 3, 0.75)
    assert a["excluded"] == {"cancelled": 1, "infrastructure": 1}
    assert a["failures"] == {"verifier": 1}
    assert a["mean_score"] == pytest.approx(0.875)
    assert a["pass_at_k"] == {"1": 0.75, "2": 1.0, "3": 1.0, "4": 1.0}
    assert a["pass_rate_ci95"] == pytest.approx(list(wilson_interval(3, 4)), abs=1e-6)
    assert (b["trials"], b["passed"], b["scored"]) == (4, 1, 3)
    assert b["failures"] == {"agent": 1, "timeout": 1, "unscored": 1}
    assert b["mean_score"] == pytest.approx(1 / 3)
    # pass@2 of b: 1 - C(3,2)/C(4,2) = 0.5
    assert b["pass_at_k"]["2"] == pytest.approx(0.5)
    [ev] = summary["evals"]
    assert (ev["trials"], ev["passed"]) == (8, 4)
    # eval pass@k is the mean over its tasks: pass@1 = (0.75 + 0.25) / 2, pass@2 = (1 + 0.5)/2
    assert ev["pass_at_k"]["1"] == pytest.approx(0.5)
    assert ev["pass_at_k"]["2"] == pytest.approx(0.75)
    pooled = Moments()
    for v in (1, 1, 1, 0.5, 1, 0, 0):
        pooled.add(v)
    assert ev["mean_score"] == pytest.approx(pooled.mean)
    assert ev["mean_score_ci95"] == pytest.approx(list(pooled.interval()), abs=1e-6)
    lines = format_table(summary)
    assert lines[0].split()[:2] == ["trials", "passed"]
    assert lines[1].split()[:4] == ["a", "4", "3", "0.750"]
    assert "not passed: b: agent 1, timeout 1, unscored 1" in lines


def test_failure_classes_are_complete_and_consistent():
    assert failure_class("passed", None) is None
    assert failure_class("scored_below", None) == "verifier"
    assert failure_class("unscored", None) == "unscored"
    assert failure_class("cancelled", None) == "cancelled"
    assert failure_class("failed", {"class": "infrastructure"}) == "infrastructure"
    assert failure_class("failed", {"class": "error"}) == "env"
    assert failure_class("failed", None) == "env"
    assert step_failure_class("model") == "agent"
    assert step_failure_class("something-new") == "env"


def test_shown_ks():
    assert shown_ks(1) == [1]
    assert shown_ks(5) == [1, 2, 4, 5]
    assert shown_ks(8) == [1, 2, 4, 8]


def test_pass_at_k_of_many_trials_matches_the_exact_binomials() -> None:
    """Above EXACT_UP_TO trials pass@k goes through log-gamma (a run page of 100,000 trials
    asks dozens of them); it agrees with the exact ratio."""
    import math

    from agent_env.reporting.stats import EXACT_UP_TO, pass_at_k

    for n in (EXACT_UP_TO + 1, 20_000):
        for c in (0, 1, n // 7, n // 2, n - 3):
            for k in (1, 2, 64, n // 3, n - c):
                exact = 1.0 - math.comb(n - c, k) / math.comb(n, k) if n - c >= k else 1.0
                assert abs(pass_at_k(n, c, k) - exact) < 1e-9, (n, c, k)
