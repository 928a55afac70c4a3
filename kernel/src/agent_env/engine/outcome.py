"""The outcome rule and the failure classes of a finished task instance.

Outcome: `cancelled` if the DAG was interrupted; `failed at step 'x': ...` on a fatal step
failure; otherwise the verifier scores decide. When an aggregating verifier (a step class
with `Step.is_aggregate = True`, such as core-steps' `aggregate_verifiers`) recorded a score, only
aggregate scores count (they already summarize the verifiers they read); otherwise every
recorded non-null score counts. No score: `unscored`; every score >= 1: `passed (id: 1)`;
else `scored below 1 (id: 0.5, ...)`.

Failure class (`failure_class(status, failure)`): every finished trial that did not pass gets
one of `FAILURE_CLASSES`, so reports can tell whose fault a failure was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Why a trial did not pass: `verifier` (it ran and scored below 1), `agent` (the agent or its
#: model misbehaved), `env` (a task step or the environment failed: the default for a step
#: error), `infrastructure` (sandbox, docker, store or engine: retried by `--retry-infra`),
#: `timeout`, `cancelled` (interrupted), `unscored` (no verifier recorded a score).
FAILURE_CLASSES = (
    "verifier",
    "agent",
    "env",
    "infrastructure",
    "timeout",
    "cancelled",
    "unscored",
)
#: Step failure classes as steps raise them (`StepFailed(failure_class=...)`) -> report class.
_STEP_CLASSES = {
    "agent": "agent",
    "model": "agent",
    "env": "env",
    "error": "env",
    "verifier": "env",
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


def counted_scores(steps: Sequence[Any], verifiers: Mapping[str, Any]) -> dict[str, float]:
    """The scores that decide the outcome (see the module docstring)."""
    scores: dict[str, float] = {}
    for vid, v in (verifiers or {}).items():
        score = v.get("score") if isinstance(v, dict) else None
        if isinstance(score, (int, float)):
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
    """(status, outcome string, counted scores) for a finished DAG."""
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


def step_failure_class(raised: str | None) -> str:
    """The report class of a step failure class as raised; unknown ones count as `env`."""
    return _STEP_CLASSES.get(str(raised or "error").lower(), "env")


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
