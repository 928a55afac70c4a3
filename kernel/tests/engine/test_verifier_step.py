"""`VerifierStep.record`: the shared verifier tail (aggregate, record, log) for any plugin."""

from __future__ import annotations

from typing import ClassVar

import attrs
import pytest

from agent_env.models import VerifierStep


@attrs.frozen(kw_only=True)
class Halves(VerifierStep):
    type: ClassVar[str] = "halves"
    score_aggregator: str = "weighted_average"

    async def execute(self, ctx) -> None:
        rows = [{"id": "a", "result": True}, {"id": "b", "result": False}]
        self.record(ctx, rows, "2 rows")


@pytest.mark.anyio
async def test_record_aggregates_and_decides_the_outcome(harness):
    inst = await harness.run([Halves(id="h", verifier_id="half")])
    assert inst.state["verifiers"]["half"]["score"] == 0.5
    assert len(inst.state["verifiers"]["half"]["results"]) == 2
    assert inst.record["outcome"] == "scored below 1 (half: 0.5)"


def test_a_verifier_step_is_a_verifier_with_a_fresh_id():
    a, b = Halves(id="a"), Halves(id="b")
    assert Halves.is_verifier and not Halves.is_aggregate
    assert a.verifier_id != b.verifier_id
    assert Halves(id="c").score_aggregator == "weighted_average"
