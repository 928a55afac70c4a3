"""`aggregate_verifiers`: one score over the result rows of several earlier verifiers."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.models import VerifierStep
from agent_env.scoring import ScoreAggregator
from agent_env.suggest import did_you_mean


@attrs.frozen(kw_only=True)
class AggregateVerifiers(VerifierStep):
    type: ClassVar[str] = "aggregate_verifiers"
    is_aggregate: ClassVar[bool] = True

    verifier_ids: list[str] = attrs.field(factory=list)
    score_aggregator: ScoreAggregator = "weighted_average"

    def check(self, bundle: Any) -> list[str]:
        return [] if self.verifier_ids else ["verifier_ids is empty"]

    async def execute(self, ctx: StepContext) -> None:
        recorded = ctx.get("verifiers", default={}) or {}
        missing = [v for v in self.verifier_ids if v not in recorded]
        if missing:
            hint = did_you_mean(missing[0], recorded)
            raise StepFailed(
                self.id,
                f"no verifier results for {', '.join(map(repr, missing))}{hint}; recorded: "
                + (", ".join(sorted(recorded)) or "none"),
            )
        rows: list[dict[str, Any]] = []
        for vid in self.verifier_ids:
            rows.extend(recorded[vid].get("results") or [])
        counted = [r for r in rows if not r.get("skipped")]
        self.record(ctx, counted, f"{len(counted)} results from {len(self.verifier_ids)} verifiers")
        ctx.set("verifiers", self.verifier_id, "source_verifier_ids", value=list(self.verifier_ids))
