"""Every core step type against the shared StepTypeContract."""

from __future__ import annotations

from agentenv_core_steps.steps import (
    AggregateVerifiers,
    DeploySandbox,
    LoadArtifact,
    RunCode,
    TeardownSandboxes,
    VerifySandbox,
)
from agentenv_testing.contracts import StepTypeContract

HOOKS = "agentenv_core_steps.hooks"
DEPLOY = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"}
GREETING = {"artifacts/greeting/greeting.txt": "hello\n"}
PROBE = {
    "id": "v1",
    "type": "verify_sandbox",
    "sandbox_name": "box",
    "verifier_id": "first",
    "criteria": [{"type": "probe_dir_exists", "paths": ["/app"]}],
}


class TestDeploySandbox(StepTypeContract):
    step_class = DeploySandbox
    plugin_module = HOOKS
    example = {**DEPLOY, "env_vars": {"A": "1"}, "exposed_ports": [8080]}


class TestLoadArtifact(StepTypeContract):
    step_class = LoadArtifact
    plugin_module = HOOKS
    before = [DEPLOY]
    bundle_files = GREETING
    example = {
        "id": "load",
        "type": "load_artifact",
        "sandbox_name": "box",
        "artifact_id": "greeting",
        "destination_path": "/app/in",
    }


class TestVerifySandbox(StepTypeContract):
    step_class = VerifySandbox
    plugin_module = HOOKS
    before = [DEPLOY]
    example = {
        "id": "verify",
        "type": "verify_sandbox",
        "sandbox_name": "box",
        "verifier_id": "v",
        "criteria": [{"type": "bash_cmd_succeeds", "bash_cmd": "true"}],
    }


class TestRunCode(StepTypeContract):
    step_class = RunCode
    plugin_module = HOOKS
    before = [DEPLOY]
    bundle_files = {"artifacts/script/s.py": "def run(input):\n    return input['args']\n"}
    example = {
        "id": "code",
        "type": "run_code",
        "sandbox_name": "box",
        "script_artifact_id": "script",
        "args": {"x": 1},
    }


class TestTeardownSandboxes(StepTypeContract):
    step_class = TeardownSandboxes
    plugin_module = HOOKS
    before = [DEPLOY]
    example = {"id": "down", "type": "teardown_sandboxes", "sandbox_names": ["box"]}


class TestAggregateVerifiers(StepTypeContract):
    step_class = AggregateVerifiers
    plugin_module = HOOKS
    before = [DEPLOY, PROBE]
    example = {
        "id": "agg",
        "type": "aggregate_verifiers",
        "verifier_ids": ["first"],
        "verifier_id": "all",
    }
