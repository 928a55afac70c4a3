"""A bundle in the existing agent-env's format loads unchanged with the real core step types."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_env.bundles import load_bundle, resolve_dependencies
from agent_env.errors import BundleError

core_hooks = pytest.importorskip("agentenv_core_steps.hooks")

EXISTING_TASK = [
    {
        "id": "deploy",
        "type": "deploy_sandbox",
        "version": None,
        "sandbox_name": "work",
        "sandbox_mode": "vm",
        "cpu": 2.0,
        "memory_mb": 8192,
        "ttl_seconds": 7200,
        "fail_task_on_error": True,
    },
    {
        "id": "load",
        "type": "load_artifact",
        "version": None,
        "sandbox_name": "work",
        "artifacts": [{"id": "repo", "version": None}],
        "destination_path": "/app",
        "depends_on": [{"task_step_id": "deploy"}],
    },
    {
        "id": "script",
        "type": "run_code",
        "script_artifact_id": "checker",
        "args": {"n": 1},
        "sandbox_name": "work",
        "depends_on": ["load"],
    },
    {
        "id": "verify",
        "type": "verify_sandbox",
        "sandbox_name": "work",
        "base_dir": "/app",
        "score_aggregator": "weighted_average",
        "verifier_id": "files",
        "retry_config": {"go_to_step_id": "load", "max_retries": 1},
        "depends_on": [{"task_step_id": "script"}],
        "criteria": [
            {
                "id": "c1",
                "type": "probe_file_exists",
                "criterion": "README exists",
                "paths": ["README.md"],
                "weight": 2.0,
            },
            {
                "id": "c2",
                "type": "probe_file_contains",
                "criterion": "says hi",
                "paths": ["README.md"],
                "expected": "^hi",
            },
            {"id": "c3", "type": "rubric", "criterion": "judged elsewhere"},
        ],
    },
    {
        "id": "total",
        "type": "aggregate_verifiers",
        "verifier_ids": ["files"],
        "score_aggregator": "all_pass",
        "verifier_id": "total",
        "depends_on": ["verify"],
    },
    {
        "id": "cleanup",
        "type": "teardown_sandboxes",
        "sandbox_names": ["work"],
        "fail_task_on_error": False,
        "depends_on": [{"task_step_id": "total"}],
    },
]


def test_existing_format_bundle_loads(
    tmp_path: Path, plugin_manager: Any, register_plugin: Any, writer: Any
) -> None:
    register_plugin(core_hooks, "core-steps")
    root = tmp_path / "existing"
    writer(root / "README.md", "---\ntitle: x\n---\n[![badge](x)](y)\n# Existing bundle\n")
    writer(root / "tasks/solve.json", json.dumps(EXISTING_TASK, indent=2))
    writer(root / "evals/all.toml", 'type = "eval"\ntasks = ["solve"]\n')
    writer(root / "artifacts/repo/README.md", "hi there\n")
    writer(root / "artifacts/repo/src/main.py", "print('hi')\n")
    writer(root / "artifacts/repo/artifact.toml", 'type = "file_artifact_universe"\n')
    writer(root / "artifacts/checker/run.py", "def run(input):\n    return input['args']\n")

    bundle = load_bundle(str(root), plugin_manager)

    assert bundle.description == "Existing bundle"
    steps = bundle.tasks["solve"].steps
    assert [type(s).type for s in steps] == [
        "deploy_sandbox",
        "load_artifact",
        "run_code",
        "verify_sandbox",
        "aggregate_verifiers",
        "teardown_sandboxes",
    ]
    assert steps[1].depends_on == ["deploy"]
    assert steps[3].retry_config.retry_from_step_id == "load"
    assert resolve_dependencies(steps) == {
        "deploy": [],
        "load": ["deploy"],
        "script": ["load"],
        "verify": ["script"],
        "total": ["verify"],
        "cleanup": ["total"],
    }
    assert bundle.artifacts["repo"].kind == "fileset"
    assert bundle.artifacts["checker"].kind == "file"
    assert bundle.evals["all"].tasks == ["solve"]


def test_shipped_hello_bundle_loads(plugin_manager: Any, register_plugin: Any) -> None:
    from agent_env.bundles.source import find_installed

    if find_installed("hello") is None:
        pytest.skip("the hello bundle's entry point is not installed")
    register_plugin(core_hooks, "core-steps")
    bundle = load_bundle("hello", plugin_manager)
    assert bundle.id_prefix == "@local/agentenv-kernel/hello"
    assert bundle.tasks["hello"].id == "@local/agentenv-kernel/hello/hello"
    assert bundle.artifacts["greeting"].kind == "file"


def test_reference_step_fields_are_accepted_and_warned_once(
    tmp_path: Path, plugin_manager: Any, register_plugin: Any, writer: Any
) -> None:
    """The fields the existing product's step types define and ours do not use yet load
    (one warning per field) instead of failing as unknown; a misspelling stays an error."""
    register_plugin(core_hooks, "core-steps")
    root = tmp_path / "fields"
    writer(root / "envs/notes/env.toml", 'command = "python server.py"\n')
    writer(root / "artifacts/check/check.py", "def verify(url):\n    return True\n")
    steps = [
        {"id": "env", "type": "deploy_env", "env_id": "notes"},
        {"id": "ask", "type": "prompt_agent", "prompt": "hi", "prompt_id": "p",
         "live_trajectory": True, "depends_on": ["env"]},
        {"id": "judge", "type": "rubrics_verifier", "prompt_id": "p", "depends_on": ["ask"],
         "criteria": [{"id": "c", "criterion": "greets"}], "grade_up_to_turn": 2,
         "run_context_for_judge": ["trajectory"], "judge_batch_size": 4,
         "judge_batch_concurrency": 2},
        {"id": "outcome", "type": "env_outcome_verifier", "env_id": "notes",
         "file_artifact_id": "check", "prompt_id": "p", "depends_on": ["ask"]},
    ]  # fmt: skip
    writer(root / "tasks/t.json", json.dumps(steps))
    bundle = load_bundle(str(root), plugin_manager)
    names = sorted(w.split("'")[1] for w in bundle.warnings)
    assert names == [
        "grade_up_to_turn",
        "judge_batch_concurrency",
        "judge_batch_size",
        "live_trajectory",
        "prompt_id",
        "run_context_for_judge",
    ]
    assert "tasks/t.json step 'outcome': prompt_id" in " ".join(bundle.warnings)
    steps[1]["live_trajectroy"] = steps[1].pop("live_trajectory")
    writer(root / "tasks/t.json", json.dumps(steps))
    with pytest.raises(BundleError) as info:
        load_bundle(str(root), plugin_manager)
    assert info.value.problems == [
        "tasks/t.json: step 'ask': unknown field 'live_trajectroy' "
        "(did you mean 'live_trajectory'?)"
    ]
