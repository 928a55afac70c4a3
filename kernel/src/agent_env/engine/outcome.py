"""The outcome rule and the failure classes of a finished task instance.

Outcome: `cancelled` if the DAG was interrupted; `failed at step 'x': ...` on a fatal step
failure; otherwise the verifier scores decide. When an aggregating verifier (a step class
with `Step.is_aggregate = True`, such as core-steps' `aggregate_verifiers`) recorded a score, only
aggregate scores count (they already summarize the verifiers they read); otherwise every
recorded non-null score counts. No score: `unscored`; every score >= 1: `passed (id: 1)`;
else `scored below 1 (id: 0.5, ...)`.

Failure class (`failure_class(status, failure)`): every finished trial that did not pass gets
one of `FAILURE_CLASSES`, so reports can tell whose fault a failure was. One rule serves every
provider (docs/failures.md has the table): a step names the class of its failure
(`StepFailed(failure_class=...)`); an error a step does not class is the env's, except in a
verifier step (`Step.is_verifier`), where it is the verifier's own (`verifier_error`); a score
that is not a finite number in [0, 1] is `verifier_error` too, whatever step wrote it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

#: Why a trial did not pass: `verifier` (it ran and scored below 1), `agent` (the agent or its
#: model misbehaved), `env` (a task step or the environment failed: the default for a step
#: error), `verifier_error` (a verifier raised or recorded a score that is not one: excluded
#: from the statistics, not retried), `infrastructure` (sandbox, docker, store, engine or the
#: transport between our processes: excluded, retried by `--retry-infra`), `timeout`,
#: `cancelled` (interrupted), `unscored` (no verifier recorded a score).
FAILURE_CLASSES = (
    "verifier",
    "agent",
    "env",
    "verifier_error",
    "infrastructure",
    "timeout",
    "cancelled",
    "unscored",
)
#: Classes that say nothing of the agent: left out of pass rates and mean scores, listed as
#: excluded (`reporting.results`).
EXCLUDED_CLASSES = ("infrastructure", "verifier_error", "cancelled")
#: Step failure classes as steps raise them (`StepFailed(failure_class=...)`) -> report class.
_STEP_CLASSES = {
    "agent": "agent",
    "model": "agent",
    "env": "env",
    "error": "env",
    "verifier": "verifier_error",
    "verifier_error": "verifier_error",
    "infrastructure": "infrastructure",
    "infra": "infrastructure",
    "sandbox": "infrastructure",
    "store": "infrastructure",
    "timeout": "timeout",
    "cancelled": "cancelled",
}


def aggregate_ids(steps: Sequence[Any]) -> set[str]:
    out = set()
    for step in steps:
        if type(step).is_aggregate:
            vid = getattr(step, "verifier_id", None) or step.id
            out.add(vid)
    return out


def score_problem(score: Any) -> str | None:
    """Why a recorded verifier score is garbage (None when it is a finite number in [0, 1];
    a null score is no score, not garbage)."""
    if score is None:
        return None
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        return f"{score!r:.40} is a {type(score).__name__}, not a number"
    if not math.isfinite(score):
        return f"{score!r} is not a finite number"
    if not 0 <= score <= 1:
        return f"{score:g} is outside [0, 1]"
    return None


def rows_problem(results: Sequence[Any]) -> str | None:
    """Why a verifier's result rows are garbage: a row that is not an object, or a `score` or
    `weight` that is not a finite number (a NaN score would be clamped to a pass)."""
    for i, row in enumerate(results):
        if not isinstance(row, Mapping):
            return f"row {i} is a {type(row).__name__}, not an object"
        for key in ("score", "weight"):
            value = row.get(key)
            if value is None:
                continue
            finite = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not finite or not math.isfinite(value):
                return f"row {i} ({row.get('id', '?')}): {key} {value!r:.40} is not a finite number"
    return None


def garbage_scores(verifiers: Mapping[str, Any]) -> dict[str, str]:
    """verifier id -> why its recorded score is garbage, for every such verifier."""
    out = {}
    for vid, v in (verifiers or {}).items():
        problem = score_problem(v.get("score") if isinstance(v, Mapping) else None)
        if problem is not None:
            out[vid] = problem
    return out


def counted_scores(steps: Sequence[Any], verifiers: Mapping[str, Any]) -> dict[str, float]:
    """The scores that decide the outcome (see the module docstring); garbage ones left out."""
    scores: dict[str, float] = {}
    for vid, v in (verifiers or {}).items():
        score = v.get("score") if isinstance(v, dict) else None
        if score_problem(score) is None and score is not None:
            scores[vid] = score
    aggs = aggregate_ids(steps)
    if any(vid in aggs for vid in scores):
        scores = {vid: s for vid, s in scores.items() if vid in aggs}
    return scores


def fmt_score(score: float) -> str:
    return f"{score:.4g}"


def decide(
    steps: Sequence[Any],
    state: Mapping[str, Any],
    *,
    failure: Mapping[str, Any] | None,
    cancelled: bool,
) -> tuple[str, str, dict[str, float]]:
    """(status, outcome string, counted scores) for a finished DAG (a garbage score is a
    `failure`: see `garbage_failure`)."""
    scores = counted_scores(steps, state.get("verifiers") or {})
    if cancelled:
        return "cancelled", "cancelled", scores
    if failure is not None:
        if failure.get("step") is None:
            return "failed", f"failed: {failure['message']}", scores
        return (
            "failed",
            f"failed at step {failure['step']!r}: {failure['message']}",
            scores,
        )
    if not scores:
        return "unscored", "unscored", scores
    listed = ", ".join(f"{vid}: {fmt_score(s)}" for vid, s in scores.items())
    if all(s >= 1 for s in scores.values()):
        return "passed", f"passed ({listed})", scores
    return "scored_below", f"scored below 1 ({listed})", scores


def doubtful(error: str | None, failure_class: str, ops: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a step's result may be the doing of a sandbox that vanished under it (so the
    engine asks its sandboxes, `Sandbox.vanished`): it failed for a reason that would count
    against the agent or the env, or it recorded a verifier score below 1."""
    if error is not None:
        return failure_class not in ("infrastructure", "cancelled")
    for op in ops:
        path = op.get("path") or []
        if op.get("op") != "set" or not path or path[0] != "verifiers":
            continue
        value = op.get("value")
        score = value.get("score") if isinstance(value, Mapping) else value
        if path[-1] in ("score", *path[1:2]) and isinstance(score, (int, float)) and score < 1:
            return True
    return False


def garbage_failure(state: Mapping[str, Any]) -> dict[str, Any] | None:
    """The failure of a DAG whose verifiers recorded a garbage score (class `verifier_error`),
    or None: such a score decides nothing, so the trial fails as the verifier's error."""
    bad = garbage_scores(state.get("verifiers") or {})
    if not bad:
        return None
    vid, why = next(iter(bad.items()))
    return {
        "step": None,
        "message": f"verifier {vid!r} recorded a score that is not one: {why}",
        "class": "verifier_error",
    }


def step_failure_class(raised: str | None, *, verifier: bool = False) -> str:
    """The report class of a step failure class as raised; an unclassed one (`error`, an
    unknown name) is `env`, or `verifier_error` when raised by a verifier step."""
    unclassed = "verifier_error" if verifier else "env"
    name = str(raised or "error").lower()
    if name == "error":
        return unclassed
    return _STEP_CLASSES.get(name, unclassed)


def failure_class(status: str, failure: Mapping[str, Any] | None) -> str | None:
    """The failure class of a finished record; None when it passed or has not finished."""
    if status == "scored_below":
        return "verifier"
    if status in ("cancelled", "unscored"):
        return status
    if status == "failed":
        return step_failure_class((failure or {}).get("class"))
    return None


# ---- the record models -----------------------------------------------------------------
