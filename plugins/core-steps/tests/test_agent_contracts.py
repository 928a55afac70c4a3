"""The agent step types against the shared StepTypeContract (the scripted agent runs without a
model or an env, so each example runs for real)."""

from __future__ import annotations

import json

import pytest

from agentenv_core_steps.steps.agent_steps import (
    AgentPromptResponseVerifier,
    DeployAgent,
    PromptAgent,
    RubricsVerifier,
    RunContainerUnitTestsVerifier,
    ToolCallVerifier,
)
from agentenv_testing.contracts import StepTypeContract

HOOKS = "agentenv_core_steps.hooks"
SOLUTION = {"turns": [{"response": "hello there"}]}
DEPLOY = {
    "id": "agent",
    "type": "deploy_agent",
    "a2a_agent_id": None,
    "metadata": {"solution": SOLUTION},
    "env_vars": {"TZ": "UTC"},
    "role": "solver",
}
ASK = {"id": "ask", "type": "prompt_agent", "prompt": "hi", "prompt_id": "p", "timeout_seconds": 30}
BOX = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"}


class ScriptedByDefault:
    """Run every example with the scripted agent (what `--agent scripted` does)."""

    bundle_files = {"agents/solver/agent.toml": 'type = "scripted"\n'}


class TestDeployAgent(ScriptedByDefault, StepTypeContract):
    step_class = DeployAgent
    plugin_module = HOOKS
    example = {**DEPLOY, "a2a_agent_id": "solver"}


class TestPromptAgent(ScriptedByDefault, StepTypeContract):
    step_class = PromptAgent
    plugin_module = HOOKS
    before = [{**DEPLOY, "a2a_agent_id": "solver"}]
    example = ASK


class TestAgentPromptResponseVerifier(ScriptedByDefault, StepTypeContract):
    step_class = AgentPromptResponseVerifier
    plugin_module = HOOKS
    before = [{**DEPLOY, "a2a_agent_id": "solver"}, ASK]
    example = {
        "id": "v",
        "type": "agent_prompt_response_verifier",
        "prompt_id": "p",
        "verifier_id": "answer",
        "criteria": [{"type": "response_contains", "needles": ["hello"]}],
    }


class TestToolCallVerifier(ScriptedByDefault, StepTypeContract):
    step_class = ToolCallVerifier
    plugin_module = HOOKS
    before = [{**DEPLOY, "a2a_agent_id": "solver"}, ASK]
    example = {
        "id": "v",
        "type": "tool_call_verifier",
        "prompt_id": "p",
        "verifier_id": "calls",
        "criteria": [{"type": "tool_call_count", "max": 0}],
    }


class TestRubricsVerifier(ScriptedByDefault, StepTypeContract):
    step_class = RubricsVerifier
    plugin_module = HOOKS
    before = [{**DEPLOY, "a2a_agent_id": "solver"}, ASK]
    example = {
        "id": "v",
        "type": "rubrics_verifier",
        "prompt_id": "p",
        "verifier_id": "rubric",
        "criteria": [{"id": "c", "criterion": "polite"}],
    }

    @pytest.fixture(autouse=True)
    def judge(self, monkeypatch):
        """A scripted judge model that grades every criterion as met."""
        from agentenv_protocol.agent.testing import ScriptedModelServer

        verdict = {"criteria": [{"id": "c", "score": 1, "justification": "polite enough"}]}
        with ScriptedModelServer([{"content": json.dumps(verdict)}] * 4) as model:
            monkeypatch.setenv("LITELLM_BASE_URL", model.base_url)
            yield model


class TestRunContainerUnitTestsVerifier(StepTypeContract):
    step_class = RunContainerUnitTestsVerifier
    plugin_module = HOOKS
    before = [BOX]
    example = {
        "id": "tests",
        "type": "run_container_unit_tests_verifier",
        "sandbox_name": "box",
        "container_name": "main",
        "command": "true",
        "verifier_id": "unit",
    }
