"""Seed values keep their TOML types: a seeded integer reaches a tool-call check as an integer,
so a trial whose agent sends exactly the seeded amount scores 1."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import run_json  # noqa: E402
from bank_support import PAY_BOB, bank_bundle  # noqa: E402

from agentenv_protocol.agent.testing import ScriptedModelServer  # noqa: E402


def test_a_seeded_integer_matches_the_tool_call_and_the_trial_scores_1(tmp_path):
    bundle = bank_bundle(
        tmp_path / "bundle",
        prompt="Send {amount} to {to}.",
        seeds='[[trial]]\namount = 15000\nto = "bob"\n',
    )
    with ScriptedModelServer(PAY_BOB) as model:
        data, stderr = run_json(
            tmp_path / "home", str(bundle), env={"LITELLM_BASE_URL": model.base_url}
        )
    [record] = data["tasks"]
    assert model.requests[0]["messages"][-1]["content"] == "Send 15000 to bob.", stderr
    [row] = record["verifiers"]["calls"]["results"]
    assert row["arguments"] == {"amount": 15000, "to": "bob"}, row
    assert row["result"] is True, row["justification"]
    assert record["verifiers"]["calls"]["score"] == 1.0
    assert record["status"] == "passed", record["outcome"] + "\n" + stderr
