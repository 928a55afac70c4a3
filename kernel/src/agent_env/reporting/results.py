"""Results of a run with trials, from its `TaskInstanceRecord`s: per task and per eval, trials,
pass rate (Wilson 95% interval), mean score (Student t 95% interval), pass@k for every k up to
the trials, failure classes.

Which trials count: a finished trial counts unless it ended `infrastructure` (not the agent's
fault; `--retry-infra` re-runs those), `verifier_error` (the verifier broke: the trial says
nothing of the agent) or `cancelled`, or is unfinished; those are listed as excluded. A trial's score is `TaskInstanceRecord.score()`: the mean of its counted verifier
scores, 0 for a trial that failed at a step, none for an unscored one (not passed). An eval
pools its tasks' trials for the pass rate and mean score and averages its tasks' pass@k (the
estimator's usual per-problem mean). Everything is kept as counts and running sums: memory does
not grow with the number of trials.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from agent_env.engine.outcome import EXCLUDED_CLASSES
from agent_env.engine.records import FINISHED, Status, TaskInstanceRecord
from agent_env.reporting.stats import Moments, pass_at_k, wilson_interval

#: Statuses a result counts (cancelled trials are counted, then excluded).
FINAL = FINISHED | {Status.CANCELLED}
EXCLUDED = EXCLUDED_CLASSES
INTERVALS = {
    "pass_rate": "Wilson score interval, 95%",
    "mean_score": "Student t interval on the trial scores, 95%",
}


class TaskStats:
    """Counts and sums for one task's trials."""

    __slots__ = ("excluded", "failures", "moments", "n", "name", "passes", "seconds")

    def __init__(self, name: str):
        self.name = name
        self.n = 0
        self.passes = 0
        self.moments = Moments()
        self.failures: Counter[str] = Counter()
        self.excluded: Counter[str] = Counter()
        self.seconds = 0.0

    def add(self, record: TaskInstanceRecord, times: int = 1) -> None:
        """Count `record` (`times` identical trials at once: grouped counts from the store)."""
        status = record.status
        if status not in FINAL:
            self.excluded["unfinished"] += times
            return
        cls = record.effective_failure_class()
        if cls in EXCLUDED:
            self.excluded[cls] += times
            return
        self.n += times
        self.seconds += float(record.seconds or 0.0) * times
        if status == Status.PASSED:
            self.passes += times
        elif cls is not None:
            self.failures[cls] += times
        score = record.score()
        if score is not None:
            if times == 1:
                self.moments.add(score)
            else:
                same = Moments()
                same.n, same.mean = times, score
                self.moments.merge(same)


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def _pair(pair: tuple[float, float] | None) -> list[float] | None:
    return None if pair is None else [round(pair[0], 6), round(pair[1], 6)]


def _summary(
    name: str,
    n: int,
    passes: int,
    moments: Moments,
    failures: Counter[str],
    excluded: Counter[str],
    pass_at: dict[int, float],
) -> dict[str, Any]:
    return {
        "name": name,
        "trials": n,
        "passed": passes,
        "pass_rate": _round(passes / n) if n else None,
        "pass_rate_ci95": _pair(wilson_interval(passes, n)),
        "scored": moments.n,
        "mean_score": _round(moments.mean) if moments.n else None,
        "mean_score_ci95": _pair(moments.interval()),
        "pass_at_k": {str(k): _round(v) for k, v in pass_at.items()},
        "failures": dict(sorted(failures.items())),
        "excluded": dict(sorted(excluded.items())),
    }


class Results:
    """Feed every final trial record once (`add`); `summary()` is the report."""

    def __init__(
        self,
        task_names: Iterable[str],
        evals: Mapping[str, Sequence[str]] | None = None,
        *,
        ks: Callable[[int], Iterable[int]] | None = None,
    ):
        self.tasks: dict[str, TaskStats] = {n: TaskStats(n) for n in task_names}
        self.evals = {name: list(tasks) for name, tasks in (evals or {}).items()}
        #: Which k the pass@k figures are given for, from the trials: every k by default;
        #: `shown_ks` for many trials (each pass@k of n trials costs big binomials).
        self.ks = ks or (lambda n: range(1, n + 1))

    def add(self, record: TaskInstanceRecord, times: int = 1) -> None:
        name = record.task.name
        stats = self.tasks.get(name)
        if stats is None:
            stats = self.tasks[name] = TaskStats(name)
        stats.add(record, times)

    def task_summary(self, stats: TaskStats) -> dict[str, Any]:
        at = {k: pass_at_k(stats.n, stats.passes, k) for k in self.ks(stats.n)}
        out = _summary(
            stats.name,
            stats.n,
            stats.passes,
            stats.moments,
            stats.failures,
            stats.excluded,
            at,
        )
        out["seconds_mean"] = _round(stats.seconds / stats.n) if stats.n else None
        return out

    def eval_summary(self, name: str) -> dict[str, Any]:
        members = [self.tasks[t] for t in self.evals[name] if t in self.tasks]
        moments, failures, excluded = Moments(), Counter[str](), Counter[str]()
        for s in members:
            moments.merge(s.moments)
            failures.update(s.failures)
            excluded.update(s.excluded)
        counted = [s for s in members if s.n]
        k_max = min((s.n for s in counted), default=0)
        at = {
            k: sum(pass_at_k(s.n, s.passes, k) for s in counted) / len(counted)
            for k in self.ks(k_max)
        }
        n = sum(s.n for s in members)
        passes = sum(s.passes for s in members)
        out = _summary(name, n, passes, moments, failures, excluded, at)
        out["tasks"] = [s.name for s in members]
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "intervals": dict(INTERVALS),
            "tasks": [self.task_summary(s) for s in self.tasks.values()],
            "evals": [self.eval_summary(name) for name in self.evals],
        }


def shown_ks(k_max: int) -> list[int]:
    """The pass@k columns a terminal table shows: 1, 2, 4, 8, ... and k_max itself."""
    ks, k = [], 1
    while k < k_max:
        ks.append(k)
        k *= 2
    if k_max >= 1:
        ks.append(k_max)
    return ks


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _ci(pair: Sequence[float] | None) -> str:
    return "-" if pair is None else f"[{pair[0]:.3f}, {pair[1]:.3f}]"


#: The width the results table keeps to (without `wide`): names are shortened to fit.
TABLE_WIDTH = 100


def _fit(name: str, room: int) -> str:
    return name if len(name) <= room else name[: max(room - 1, 1)] + "\u2026"


def format_table(
    summary: Mapping[str, Any],
    *,
    wide: bool = False,
    width: int = TABLE_WIDTH,
    style: Callable[[str, float | None], str] | None = None,
) -> list[str]:
    """The results as aligned text lines (tasks, then evals, then failure classes), within
    `width` columns: names are shortened to fit. `wide` adds the pass@k columns and keeps
    names whole. `style(cell, pass_rate)` may colour the pass-rate cell (after padding)."""
    rows = [("task", s) for s in summary["tasks"]] + [("eval", s) for s in summary["evals"]]
    if not rows:
        return []
    k_max = max((len(s["pass_at_k"]) for _, s in rows), default=0)
    ks = shown_ks(k_max) if wide else []
    head = ["", "trials", "passed", "pass rate", "95% CI", "mean score", "95% CI"]
    head += [f"pass@{k}" for k in ks]
    table = [head]
    rates: list[float | None] = [None]
    for kind, s in rows:
        name = s["name"] if kind == "task" else f"eval {s['name']}"
        line = [
            name,
            str(s["trials"]),
            str(s["passed"]),
            _num(s["pass_rate"]),
            _ci(s["pass_rate_ci95"]),
            _num(s["mean_score"]),
            _ci(s["mean_score_ci95"]),
        ]
        line += [_num(s["pass_at_k"].get(str(k))) for k in ks]
        table.append(line)
        rates.append(s["pass_rate"])
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    if not wide:
        room = width - sum(widths[1:]) - 2 * (len(widths) - 1)
        widths[0] = max(min(widths[0], room), 8)
    out = []
    for r, rate in zip(table, rates, strict=True):
        cells = [_fit(r[0], widths[0]).ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)
        ]
        if style is not None and rate is not None:
            cells[3] = style(cells[3], rate)
        out.append("  ".join(cells).rstrip())
    pass_at = "pass@k: unbiased estimator" if wide else "pass@k columns: --wide"
    out.append(f"(pass rate: Wilson 95% interval; mean score: Student t 95% interval; {pass_at})")
    for kind, s in rows:
        if kind != "task":
            continue
        parts = [f"{c} {n}" for c, n in s["failures"].items()]
        parts += [f"{c} {n} (excluded)" for c, n in s["excluded"].items()]
        if parts:
            out.append(f"not passed: {s['name']}: " + ", ".join(parts))
    return out
