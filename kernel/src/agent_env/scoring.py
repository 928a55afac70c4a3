"""Score aggregation shared by the verifier steps (`models.VerifierStep.record`) (`all_pass`, `any_pass`, `weighted_average`)."""

from __future__ import annotations

import uuid
from typing import Any, Literal

ScoreAggregator = Literal["all_pass", "any_pass", "weighted_average"]


def aggregate_score(results: list[dict[str, Any]], aggregator: ScoreAggregator) -> float:
    """One score from result rows (`result` bool, optional `score` and `weight`); none -> 0.0.

    `weighted_average` weighs each row's score by its `weight` (default 1.0); a negative weight
    is a penalty of `|weight| * (1 - score)`; the result is clamped to [0, 1].
    """
    if not results:
        return 0.0
    if aggregator == "all_pass":
        return 1.0 if all(r.get("result") is True for r in results) else 0.0
    if aggregator == "any_pass":
        return 1.0 if any(r.get("result") is True for r in results) else 0.0
    if aggregator == "weighted_average":
        earned = total = penalty = 0.0
        for row in results:
            score = float(row.get("score", 1.0 if row.get("result") else 0.0))
            weight = float(row.get("weight", 1.0))
            if weight > 0:
                earned += score * weight
                total += weight
            elif weight < 0:
                penalty += (1.0 - score) * -weight
        if total == 0:
            return 0.0
        return max(0.0, min(1.0, (earned - penalty) / total))
    raise ValueError(f"unknown score_aggregator {aggregator!r}")


def random_verifier_id() -> str:
    """The default `verifier_id`: unique, so two unnamed verifiers never share results."""
    return uuid.uuid4().hex
