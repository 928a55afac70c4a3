"""sync_env_clock, register_env_triggers and collect_artifacts against the shared
StepTypeContract (naming, strict fields, registration, a real run with local processes)."""

from __future__ import annotations

import sys
from pathlib import Path

from agentenv_core_steps.steps.collect_artifacts import CollectArtifacts
from agentenv_core_steps.steps.register_env_triggers import RegisterEnvTriggers
from agentenv_core_steps.steps.sync_env_clock import SyncEnvClock
from agentenv_testing.contracts import StepTypeContract

sys.path.insert(0, str(Path(__file__).parent))
from clock_envs import FILES, deploy  # noqa: E402

HOOKS = "agentenv_core_steps.hooks"


class TestSyncEnvClock(StepTypeContract):
    step_class = SyncEnvClock
    plugin_module = HOOKS
    bundle_files = FILES
    before = [deploy("notes")]
    example = {
        "id": "clock",
        "type": "sync_env_clock",
        "env_id": "notes",
        "virtual_time": "2026-03-08T06:59:00Z",
        "virtual_seconds_per_real_second": 60,
    }


class TestRegisterEnvTriggers(StepTypeContract):
    step_class = RegisterEnvTriggers
    plugin_module = HOOKS
    bundle_files = FILES
    before = [deploy("notes")]
    example = {
        "id": "triggers",
        "type": "register_env_triggers",
        "env_id": "notes",
        "triggers": [
            {
                "id": "copy",
                "when": {"type": "action", "tool": "add_note"},
                "actions": [{"type": "tool", "tool": "list_notes", "args": {}}],
            }
        ],
    }


class TestCollectArtifacts(StepTypeContract):
    step_class = CollectArtifacts
    plugin_module = HOOKS
    before = [
        {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"},
        {
            "id": "write",
            "type": "verify_sandbox",
            "sandbox_name": "box",
            "verifier_id": "write",
            "criteria": [
                {
                    "type": "bash_cmd_succeeds",
                    "bash_cmd": "mkdir -p /app/artifact && echo hi > /app/artifact/a.txt",
                }
            ],
        },
    ]
    example = {"id": "collect", "type": "collect_artifacts", "sandbox_name": "box"}
