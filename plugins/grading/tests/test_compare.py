"""`compare_calls`: what a replay counts as the same call (times, durations and roles never
compared; results as JSON values; `--ignore` keys dropped; the recorder's cut applied)."""

from __future__ import annotations

from agentenv_grading.replay import CUT, compare_calls


def call(result, **extra):
    return {"tool": "t", "env": "e", "error": None, "result": result, **extra}


def test_times_durations_and_roles_are_never_compared():
    old = call({"a": 1}, time="2026-01-01T00:00:00Z", duration_ms=3.0, role="agent")
    new = call({"a": 1}, time="2027-01-01T00:00:00Z", duration_ms=99.0, role="other")
    assert compare_calls([old], [new]) == [{"index": 0, "tool": "t", "same": True, "fields": {}}]


def test_results_compare_as_json_values_and_ignored_keys_drop_at_any_depth():
    old = call({"content": [{"text": '{"id": 1, "title": "x"}'}]})
    new = call({"content": [{"text": '{"title": "x",  "id": 2}'}]})
    [row] = compare_calls([old], [new])
    assert row["fields"]["result"]["recorded"] == {"content": [{"text": {"id": 1, "title": "x"}}]}
    assert compare_calls([old], [new], ignore=["id"])[0]["same"] is True


def test_a_result_the_recorder_cut_compares_on_the_same_cut():
    long = {"text": "y" * (CUT * 2)}
    import json

    recorded = json.dumps(long)[:CUT] + "..."
    assert compare_calls([call(recorded)], [call(long)])[0]["same"] is True
    other = {"text": "z" * (CUT * 2)}
    assert compare_calls([call(recorded)], [call(other)])[0]["same"] is False


def test_a_missing_or_extra_call_is_a_divergence_and_errors_count():
    rows = compare_calls([call(1), call(2)], [call(1, error="boom")])
    assert rows[0]["fields"] == {"error": {"recorded": None, "replayed": "boom"}}
    assert rows[1] == {
        "index": 1,
        "tool": "t",
        "same": False,
        "fields": {"call": {"recorded": True, "replayed": False}},
    }


def test_a_trial_without_prompts_or_trajectories_cannot_be_replayed():
    import pytest

    from agent_env.errors import AgentEnvError
    from agentenv_grading.replay import script_of

    with pytest.raises(AgentEnvError, match=r"trial 'ti-1' recorded no prompt"):
        script_of({}, {"id": "ti-1", "outputs": {"check": {"score": 1}}})
    record = {"id": "ti-2", "outputs": {"ask": {"prompt_id": "ask", "trajectory": "k"}}}
    with pytest.raises(AgentEnvError, match=r"prompt 'ask' has no stored trajectory \(gone\)"):
        script_of({"ask": {"missing": "gone"}}, record)
    calls = [{"tool": "t", "arguments": {"a": 1}, "result": {"x": 1}, "time": "now"}]
    script = script_of({"ask": {"gateway_calls": calls}}, record)
    assert script == {
        "ask": {"calls": [{"tool": "t", "arguments": {"a": 1}}], "response": "", "recorded": calls}
    }
