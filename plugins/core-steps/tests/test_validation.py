"""Static problems in core steps are reported by the bundle check, naming file, step, field."""

from __future__ import annotations

import pytest

from agent_env.errors import BundleError

DEPLOY = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"}


def problems(runner, steps, files=None) -> list[str]:
    runner.write({**(files or {}), "tasks/t.json": steps})
    with pytest.raises(BundleError) as caught:
        runner.load()
    return caught.value.problems


def test_every_core_step_type_is_registered(runner):
    registry = runner.plugins().step_types
    for name in (
        "deploy_sandbox",
        "load_artifact",
        "verify_sandbox",
        "run_code",
        "teardown_sandboxes",
        "aggregate_verifiers",
    ):
        assert name in registry


def test_deploy_sandbox_fields(runner):
    found = problems(
        runner,
        [{"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mdoe": "vm"}],
    )
    joined = "\n".join(found)
    assert "step 'box': sandbox_mode: required" in joined
    assert "sandbox_mdoe" in joined and "did you mean 'sandbox_mode'" in joined
    found = problems(runner, [{**DEPLOY, "sandbox_mode": "pod"}])
    assert any("sandbox_mode" in p and "'vm'" in p for p in found), found
    found = problems(runner, [{**DEPLOY, "sandbox_mode": "container"}])
    assert any("needs `image` and `port`" in p for p in found), found


def test_load_artifact_needs_a_source_a_target_and_no_images(runner):
    found = problems(runner, [DEPLOY, {"id": "load", "type": "load_artifact"}])
    assert any("needs a source" in p for p in found)
    assert any("needs a target" in p for p in found)
    found = problems(
        runner,
        [
            DEPLOY,
            {"id": "load", "type": "load_artifact", "sandbox_name": "box", "artifact_id": "img"},
        ],
        {"artifacts/img/Dockerfile": "FROM scratch\n"},
    )
    assert any("is an image" in p for p in found), found


def test_verify_sandbox_criteria_are_checked(runner):
    found = problems(
        runner,
        [
            DEPLOY,
            {
                "id": "v",
                "type": "verify_sandbox",
                "sandbox_name": "box",
                "criteria": [
                    {"type": "probe_file_exists"},
                    {"type": "probe_file_contains", "paths": ["a"], "expected": "("},
                    {"type": "bash_cmd_succeeds"},
                ],
            },
        ],
    )
    joined = "\n".join(found)
    assert "criteria[0]: paths" in joined
    assert "criteria[1]: expected: not a regular expression" in joined
    assert "criteria[2]: bash_cmd: required" in joined
    found = problems(
        runner,
        [
            DEPLOY,
            {
                "id": "v",
                "type": "verify_sandbox",
                "sandbox_name": "box",
                "score_aggregator": "mean",
            },
        ],
    )
    assert any("score_aggregator" in p and "'all_pass'" in p for p in found), found


def test_teardown_must_be_best_effort_and_name_something(runner):
    found = problems(
        runner, [DEPLOY, {"id": "down", "type": "teardown_sandboxes", "fail_task_on_error": True}]
    )
    assert any("fail_task_on_error must be false" in p for p in found)
    assert any("needs at least one of" in p for p in found)


def test_run_code_entry_file_problems(runner):
    found = problems(
        runner,
        [{"id": "c", "type": "run_code", "script_artifact_id": "pkg"}],
        {"artifacts/pkg/a.py": "", "artifacts/pkg/b.py": ""},
    )
    assert any("no single run.py" in p for p in found), found


def test_teardown_defaults_to_tolerated_failure(runner):
    runner.write(
        {
            "tasks/t.json": [
                DEPLOY,
                {"id": "down", "type": "teardown_sandboxes", "sandbox_names": ["box"]},
            ]
        }
    )
    bundle = runner.load()
    assert bundle.tasks["t"].steps[1].fail_task_on_error is False


COMPAT_STEP_TYPES = (
    "modify_env_tool_access",
    "run_docker_container",
    "install_agent",
    "add_skills",
    "snapshot_env",
    "verify_env_card",
    "verify_env_core_protocol",
    "verify_mcp_tool_schema",
)


def test_the_existing_products_step_types_are_registered_and_hinted(runner):
    registry = runner.plugins().step_types
    for name in COMPAT_STEP_TYPES:
        assert name in registry, name
    from agent_env.plugins import PluginManager

    runner.plugins = lambda: PluginManager(autoload=False)  # core-steps disabled
    found = problems(runner, [{"id": "s", "type": "snapshot_env"}])
    assert any(
        "unknown step type 'snapshot_env'" in p and "agentenv-core-steps" in p for p in found
    ), found


def test_mcp_server_env_toml_problems(runner, tmp_path):
    found = problems(
        runner,
        [DEPLOY],
        {
            "envs/e/env.toml": 'comand = "python s.py"\nport = 0\nenv_vars = {A = 1}\n'
            'requirements = "reqs.txt"\nstartup_timeout_seconds = "5"\n',
            "envs/f/env.toml": 'command = ["python", 3]\nbase_image = 3\n',
            "envs/g/env.toml": 'command = "  "\nstartup_timeout_seconds = 0\n',
        },
    )
    assert sorted(found) == [
        "envs/e/env.toml: command: required when the env has no Dockerfile",
        "envs/e/env.toml: env_vars.A: expected a string, got 1",
        "envs/e/env.toml: port: expected an integer in 1..65535, got 0",
        "envs/e/env.toml: requirements: no file 'reqs.txt' in the env folder",
        "envs/e/env.toml: startup_timeout_seconds: expected a number, got '5'",
        "envs/e/env.toml: unknown key 'comand' (did you mean 'command'?)",
        "envs/f/env.toml: base_image: expected a string, got 3",
        "envs/f/env.toml: command[1]: expected a string, got 3",
        "envs/g/env.toml: command: expected a non-empty string or list of strings",
        "envs/g/env.toml: startup_timeout_seconds: expected a positive number, got 0",
    ]


def test_mcp_server_from_folder_raises_on_the_same_problems(tmp_path):
    from agentenv_core_steps.envs.mcp_server import McpServerEnv

    (tmp_path / "s.py").write_text("")
    with pytest.raises(ValueError) as caught:
        McpServerEnv.from_folder("e", tmp_path, {"command": "python s.py", "prot": 80})
    assert str(caught.value) == "env.toml: unknown key 'prot' (did you mean 'port'?)"
    env = McpServerEnv.from_folder("e", tmp_path, {"command": "python s.py", "port": 9000})
    assert (env.command, env.port, env.startup_timeout_seconds) == (["python", "s.py"], 9000, 120)


def test_an_env_type_that_is_not_installed(runner):
    found = problems(runner, [DEPLOY], {"envs/e/env.toml": 'type = "mcp_srever"\ncommand = "x"\n'})
    assert len(found) == 1
    assert found[0].startswith(
        "envs/e/env.toml: type: unknown env type 'mcp_srever' (did you mean 'mcp_server'?)"
    )
