"""Bad input changes nothing: each case a new user found slipping through (issue 22) is refused
at validation, exit 2, one `Error:` line naming the file, step and field, and the state folder
(stores, leases, sandboxes) exactly as a first valid run left it."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from promise_helpers import TASK, assert_refused, base_bundle, state_of


@pytest.fixture
def cli(cli_runner, register_plugin):
    import agentenv_core_steps.hooks

    register_plugin(agentenv_core_steps.hooks, "core-steps")
    return cli_runner


@pytest.fixture
def bundle(tmp_path):
    return base_bundle(tmp_path / "b")


@pytest.fixture
def ran(cli, bundle, agent_env_home):
    """The valid bundle, run once: the state every refused run must leave as it is."""
    result = cli.invoke(["run", str(bundle)])
    assert result.exit_code == 0, result.output
    assert "t  passed (hello: 1)" in result.stdout
    return state_of(agent_env_home)


def task(mutate) -> list:
    steps = copy.deepcopy(TASK)
    mutate(steps)
    return steps


def refused(cli, bundle, home, before, *names):
    result = cli.invoke(["run", str(bundle)])
    message = assert_refused(result, *names)
    assert state_of(home) == before
    return message


CASES = {
    "unknown key in a verify_sandbox criterion": (
        {"tasks__t.json": task(lambda s: s[2]["criteria"][0].update(pathz=["x"]))},
        ("tasks/t.json", "step 'verify'", "criteria[0]", "'pathz'", "did you mean 'paths'"),
    ),
    "unknown key in a tool_call_verifier criterion": (
        {
            "tasks__t.json": task(
                lambda s: s.insert(
                    3,
                    {
                        "id": "calls",
                        "type": "tool_call_verifier",
                        "verifier_id": "calls",
                        "criteria": [{"type": "tool_called", "tool": "x", "min_tmes": 2}],
                    },
                )
            )
        },
        ("tasks/t.json", "step 'calls'", "criteria[0]", "'min_tmes'", "did you mean 'min_times'"),
    ),
    "unknown key in a deploy_agent skill": (
        {
            "tasks__t.json": task(
                lambda s: s.insert(
                    3,
                    {
                        "id": "agent",
                        "type": "deploy_agent",
                        "a2a_agent_id": "replay",
                        "skills": [{"name": "s", "description": "d", "bdy": "text"}],
                    },
                )
            )
        },
        ("tasks/t.json", "step 'agent'", "skills[0]", "'bdy'", "did you mean 'body'"),
    ),
    "unknown key in artifact.toml": (
        {"artifacts__greeting__artifact.toml": 'type = "file"\ndescripton = "x"\n'},
        ("artifacts/greeting/artifact.toml", "'descripton'", "did you mean 'description'"),
    ),
    "an empty step id": (
        {"tasks__t.json": task(lambda s: s[1].update(id=""))},
        ("tasks/t.json", "step #2", "id"),
    ),
    "an invalid seeds table": (
        {"seeds.toml": "seeds = [[1]]\n"},
        ("seeds.toml", "seeds[0]"),
    ),
    "a sandbox provider that does not exist": (
        {"tasks__t.json": task(lambda s: s[0].update(sandbox_type="locl"))},
        ("tasks/t.json", "step 'sandbox'", "sandbox_type", "'locl'", "did you mean 'local'"),
    ),
    "two verifiers with the same verifier_id": (
        {
            "tasks__t.json": task(
                lambda s: s.insert(
                    3,
                    {
                        "id": "fails",
                        "type": "verify_sandbox",
                        "sandbox_name": "hello",
                        "verifier_id": "hello",
                        "criteria": [
                            {"id": "no", "type": "bash_cmd_succeeds", "bash_cmd": "false"}
                        ],
                    },
                )
            )
        },
        ("tasks/t.json", "step 'fails'", "verifier_id", "'hello'", "step 'verify'"),
    ),
    "an agent.toml script outside the bundle": (
        {"agents__replay__agent.toml": 'type = "scripted"\nscript = "../../../etc/passwd"\n'},
        ("agents/replay/agent.toml", "script", "outside the agent folder"),
    ),
    "an agent.toml script that does not exist": (
        {"agents__replay__agent.toml": 'type = "scripted"\nscript = "solutoin.json"\n'},
        ("agents/replay/agent.toml", "script", "did you mean 'solution.json'"),
    ),
    "a verify probe path outside base_dir": (
        {"tasks__t.json": task(lambda s: s[2]["criteria"][1].update(paths=["../../etc/passwd"]))},
        ("tasks/t.json", "step 'verify'", "criteria[1]", "paths[0]", "outside base_dir"),
    ),
    "a URL whose file name leaves destination_path": (
        {
            "tasks__t.json": task(
                lambda s: s[1].update(
                    artifact_id=None, urls=["http://127.0.0.1:9/a/..%2F..%2Fetc%2Fcron.d%2Fx"]
                )
            )
        },
        ("tasks/t.json", "step 'load'", "urls", "outside destination_path"),
    ),
    "an envs/NAME.toml file where a folder is expected": (
        {
            "envs__mail.toml": 'type = "mcp_server"\n',
            "tasks__t.json": task(
                lambda s: s.insert(3, {"id": "env", "type": "deploy_env", "env_id": "mail"})
            ),
        },
        ("envs/mail.toml", "a folder, not a file", "envs/mail/env.toml"),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_bundle_is_refused_before_anything_is_written(case, cli, bundle, agent_env_home, ran):
    replace, names = CASES[case]
    base_bundle(bundle, **replace)
    refused(cli, bundle, agent_env_home, ran, *names)


def test_a_refused_bundle_on_a_fresh_state_folder_creates_nothing(cli, tmp_path, agent_env_home):
    bundle = base_bundle(tmp_path / "b", **{"seeds.toml": "seeds = []\n"})
    assert_refused(cli.invoke(["run", str(bundle)]), "seeds.toml")
    assert list(agent_env_home.iterdir()) == []


def test_dry_run_reports_the_same_problems(cli, bundle, agent_env_home, ran):
    base_bundle(bundle, **{"tasks__t.json": task(lambda s: s[1].update(id=""))})
    result = cli.invoke(["run", str(bundle), "--dry-run"])
    assert_refused(result, "tasks/t.json", "step #2")
    assert state_of(agent_env_home) == ran


def test_the_valid_bundle_still_passes_with_every_optional_file(cli, bundle, agent_env_home):
    result = cli.invoke(["run", str(bundle), "--json"])
    assert result.exit_code == 0, result.output
    [record] = json.loads(result.stdout)["tasks"]
    assert record["outcome"] == "passed (hello: 1)"
