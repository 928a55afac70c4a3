"""verify_env_card, verify_env_core_protocol and verify_mcp_tool_schema against real env
servers (local processes): a tidy env passes each, a broken one fails each, saying why."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_env.errors import BundleError

sys.path.insert(0, str(Path(__file__).parent))
from compat_envs import FILES, deploy, validators  # noqa: E402

pytestmark = pytest.mark.anyio


def rows(state: dict, verifier: str) -> dict[str, dict]:
    return {r["id"]: r for r in state["verifiers"][verifier]["results"]}


async def test_a_tidy_env_passes_every_validator(runner):
    record = await runner.run([deploy("tidy"), *validators("tidy")], FILES)
    assert record["outcome"].startswith("passed"), (record["failure"], runner.logs.lines)
    state = runner.state
    for kind in ("verify_env_card", "verify_env_core_protocol", "verify_mcp_tool_schema"):
        assert state["verifiers"][f"{kind}-tidy"]["score"] == 1.0
    card = state["verifications"]["environment_card"]
    assert card["environment_card"]["name"] == "tidy"
    assert sorted(card["validated_environment_card"]["tools"]) == ["add_item", "list_items"]
    assert state["verifications"]["env_core_protocol"] == {
        "data/reset": {"supported": True},
        "data/add": {"supported": True},
        "data/get": {"supported": True},
    }
    assert state["verifications"]["mcp_tool_schema"]["passed"] is True
    # the probes changed nothing: the env still holds its seed item
    assert state["verifications"]["mcp_tool_schema"]["total_tools"] == 2


async def test_a_broken_env_fails_each_validator_with_the_reason(runner):
    record = await runner.run([deploy("broken"), *validators("broken")], FILES)
    assert record["outcome"].startswith("scored below 1"), record
    state = runner.state
    card = rows(state, "verify_env_card-broken")
    assert card["card-accessible"]["result"] is True
    assert card["field:preferredTransport"]["result"] is False
    assert "no 'preferredTransport'" in card["field:preferredTransport"]["justification"]
    assert card["field:name"]["result"] is True
    assert state["verifiers"]["verify_env_card-broken"]["score"] == 0.0

    protocol = rows(state, "verify_env_core_protocol-broken")
    assert protocol["data/get"]["result"] is False
    assert "method not found" in protocol["data/get"]["justification"]
    assert protocol["data/add"]["result"] is False
    assert protocol["data/reset"]["result"] is False
    assert "do not list it" in protocol["data/reset"]["justification"]

    schema = rows(state, "verify_mcp_tool_schema-broken")
    why = schema["poke"]["justification"]
    assert schema["poke"]["result"] is False
    assert "tool 'poke' has no description" in why
    assert "parameter 'thing' has no description" in why
    assert state["verifications"]["mcp_tool_schema"]["tools_missing_description"] == ["poke"]


def test_a_validator_naming_an_unknown_env_is_a_bundle_problem(runner):
    runner.write(
        {
            **FILES,
            "tasks/t.json": [
                deploy("tidy"),
                {"id": "card", "type": "verify_env_card", "env_id": "tidi"},
                {"id": "proto", "type": "verify_env_core_protocol"},
                {
                    "id": "schema",
                    "type": "verify_mcp_tool_schema",
                    "env_id": "tidy",
                    "env_idd": "x",
                },
            ],
        }
    )
    with pytest.raises(BundleError) as caught:
        runner.load()
    found = "\n".join(caught.value.problems)
    assert "tasks/t.json: step 'card': env_id: no env 'tidi' in the bundle" in found
    assert "did you mean 'tidy'" in found
    assert "step 'proto': env_id: required" in found
    assert "step 'schema'" in found and "did you mean 'env_id'" in found


async def test_a_validator_of_an_env_not_deployed_fails_naming_the_deployed_ones(runner):
    steps = [deploy("tidy"), {"id": "card", "type": "verify_env_card", "env_id": "broken"}]
    record = await runner.run(steps, FILES)
    assert "failed at step 'card'" in record["outcome"], record
    assert "env 'broken' is not deployed in this task" in record["failure"]["message"]
    assert "deployed: tidy" in record["failure"]["message"]
