"""Bad agent steps and options are refused before anything runs, naming the file, the step and
the field, with a did-you-mean where one helps; nothing is written to the stores."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import NOTES_AGENT, agent_env, groceries_steps, notes_bundle  # noqa: E402

DEPLOY = {"id": "agent", "type": "deploy_agent"}
ASK = {"id": "ask", "type": "prompt_agent", "prompt_id": "ask", "prompt": "hi"}

CASES = {
    "env var name": (
        [{**DEPLOY, "env_vars": {"1TZ": "UTC"}}],
        "step 'agent': env_vars: '1TZ' is not a valid environment variable name",
    ),
    "solution artifact": (
        [{**DEPLOY, "metadata": {"solution": "check_grocerie"}}],
        "metadata.solution: no artifact 'check_grocerie' in the bundle (did you mean 'check_groceries'?)",
    ),
    "solution shape": (
        [{**DEPLOY, "metadata": {"solution": {"turns": [{"tool_calls": [{"arguments": {}}]}]}}}],
        "turns[0].tool_calls[0]: 'tool' (a tool name) is required",
    ),
    "prompt and parts": (
        [DEPLOY, {**ASK, "parts": [{"kind": "text", "text": "x"}]}],
        "step 'ask': set exactly one of prompt and parts",
    ),
    "response criterion": (
        [
            DEPLOY,
            ASK,
            {
                "id": "v",
                "type": "agent_prompt_response_verifier",
                "prompt_id": "ask",
                "criteria": [{"type": "response_contain", "needles": ["x"]}],
            },
        ],
        "unknown criterion type 'response_contain' (did you mean 'response_contains'?)",
    ),
    "regex": (
        [
            DEPLOY,
            ASK,
            {
                "id": "v",
                "type": "agent_prompt_response_verifier",
                "prompt_id": "ask",
                "criteria": [{"type": "response_regex_present", "pattern": "(unclosed"}],
            },
        ],
        "criteria[0]: pattern: missing ), unterminated subpattern",
    ),
    "tool criterion": (
        [
            DEPLOY,
            ASK,
            {
                "id": "v",
                "type": "tool_call_verifier",
                "prompt_id": "ask",
                "criteria": [{"type": "tool_caled", "tool": "add_note"}],
            },
        ],
        "unknown criterion type 'tool_caled' (did you mean 'tool_called'?)",
    ),
    "rubric ids": (
        [
            DEPLOY,
            ASK,
            {
                "id": "v",
                "type": "rubrics_verifier",
                "prompt_id": "ask",
                "criteria": [{"id": "a", "criterion": "x"}, {"id": "a", "criterion": "y"}],
            },
        ],
        "criteria[0]: id 'a' is used more than once",
    ),
    "unknown field": ([{**DEPLOY, "agent_nmae": "x"}], "agent_nmae"),
    "agent ref": (
        [{**DEPLOY, "a2a_agent_id": "tool-loop-a2"}],
        "a2a_agent_id: no agent 'tool-loop-a2' in the bundle",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_agent_steps_are_refused_before_running(tmp_path, case):
    steps, message = CASES[case]
    bundle = notes_bundle(tmp_path, {"t": steps})
    home = tmp_path / "home"
    done = agent_env(home, "run", str(bundle))
    assert done.returncode == 2, done.stderr
    assert "tasks/t.json" in done.stderr and message in done.stderr, done.stderr
    assert "No runs recorded yet" in agent_env(home, "runs", "list").stdout


def test_unknown_agent_option_suggests_and_writes_nothing(tmp_path):
    home = tmp_path / "home"
    done = agent_env(home, "run", str(NOTES_AGENT), "--agent", "orcale")
    assert done.returncode == 2
    assert "no agent 'orcale' (did you mean 'oracle'?)" in done.stderr
    assert "artifact check_groceries" not in done.stderr
    assert "No runs recorded yet" in agent_env(home, "runs", "list").stdout


def test_oracle_on_a_bundle_without_solutions_is_a_usage_error(tmp_path):
    steps = groceries_steps()
    del steps[1]["metadata"]
    done = agent_env(
        tmp_path / "home", "run", str(notes_bundle(tmp_path, {"t": steps})), "--agent", "oracle"
    )
    assert done.returncode == 2
    assert "no selected task of bundle 'bundle' ships a solution" in done.stderr


#: An agent type of each in-tree plugin that reads agent.toml; every one structures it strictly.
AGENT_TYPES = (
    "a2a_agent",
    "tool-loop",
    "scripted",
    "oracle",
    "claude-code",
    "openhands",
    "openenv",
)


@pytest.mark.parametrize("kind", AGENT_TYPES)
def test_a_misspelled_agent_toml_key_is_refused_by_check_and_dry_run(tmp_path, kind):
    """`modle = "x"` in agent.toml is a load problem naming the file and the key with a
    did-you-mean, for every agent type the project ships; nothing is recorded."""
    agents = {"solver": {"agent.toml": f'type = "{kind}"\nmodle = "x"\n'}}
    bundle = notes_bundle(tmp_path, {"t": groceries_steps(a2a_agent_id="solver")}, agents)
    home = tmp_path / "home"
    message = "agents/solver/agent.toml: unknown key 'modle' (did you mean 'model'?)"
    for args in (("check", str(bundle)), ("run", str(bundle), "--dry-run")):
        done = agent_env(home, *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert message in done.stdout + done.stderr, (args, done.stdout, done.stderr)
    assert "No runs recorded yet" in agent_env(home, "runs", "list").stdout


def test_the_existing_products_agent_toml_keys_are_accepted_and_reported_ignored(tmp_path):
    """`image`, `default_env_vars` and `[metadata]` (the existing product's agent.toml) parse on
    an a2a_agent folder; the check names them as ignored instead of refusing the bundle."""
    toml = (
        'command = ["python", "agent.py"]\nmax_turns = 4\nimage = "agent-image"\n'
        'default_env_vars = {TZ = "UTC"}\n[metadata]\ndefault_model = "m"\n'
    )
    agents = {"solver": {"agent.toml": toml}}
    bundle = notes_bundle(tmp_path, {"t": groceries_steps(a2a_agent_id="solver")}, agents)
    done = agent_env(tmp_path / "home", "check", str(bundle))
    assert done.returncode == 0, done.stdout + done.stderr
    for key in ("image", "default_env_vars", "metadata"):
        assert key in done.stderr and "ignored" in done.stderr, done.stderr
