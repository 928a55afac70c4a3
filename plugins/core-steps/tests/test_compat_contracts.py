"""The step types of the existing product's bundles against the shared StepTypeContract (real
engine, local env and agent processes). run_docker_container is covered on Docker in
test_run_docker_container.py."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from compat_envs import FILES, deploy  # noqa: E402

from agentenv_core_steps.steps.add_skills import AddSkills  # noqa: E402
from agentenv_core_steps.steps.install_agent import InstallAgent  # noqa: E402
from agentenv_core_steps.steps.modify_env_tool_access import ModifyEnvToolAccess  # noqa: E402
from agentenv_core_steps.steps.run_docker_container import RunDockerContainer  # noqa: E402
from agentenv_core_steps.steps.snapshot_env import SnapshotEnv  # noqa: E402
from agentenv_core_steps.steps.verify_env_card import VerifyEnvCard  # noqa: E402
from agentenv_core_steps.steps.verify_env_core_protocol import (  # noqa: E402
    VerifyEnvCoreProtocol,
)
from agentenv_core_steps.steps.verify_mcp_tool_schema import VerifyMcpToolSchema  # noqa: E402
from agentenv_testing.contracts import StepTypeContract  # noqa: E402

HOOKS = "agentenv_core_steps.hooks"
TIDY = {k: v for k, v in FILES.items() if k.startswith("envs/tidy/")}
BOX = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"}
AGENT = """
from agentenv_protocol.agent import A2AAgent, AgentResult, serve


class Hi(A2AAgent):
    name = "hi"

    async def run(self, request):
        return AgentResult(text="hi")


serve(Hi())
"""
AGENT_FILES = {
    "agents/hi/agent.toml": 'command = ["python", "agent.py"]\n',
    "agents/hi/agent.py": AGENT,
}
INSTALL = {"id": "install", "type": "install_agent", "sandbox_name": "box", "a2a_agent_id": "hi"}


class EnvStep(StepTypeContract):
    plugin_module = HOOKS
    bundle_files = TIDY
    before = [deploy("tidy")]


class TestModifyEnvToolAccess(EnvStep):
    step_class = ModifyEnvToolAccess
    example = {
        "id": "hide",
        "type": "modify_env_tool_access",
        "env_id": "tidy",
        "action": "disable",
        "role": "agent",
        "tools": ["add_item"],
    }


class TestSnapshotEnv(EnvStep):
    step_class = SnapshotEnv
    example = {"id": "snap", "type": "snapshot_env", "env_id": "tidy"}


class TestVerifyEnvCard(EnvStep):
    step_class = VerifyEnvCard
    example = {"id": "card", "type": "verify_env_card", "env_id": "tidy", "verifier_id": "card"}


class TestVerifyEnvCoreProtocol(EnvStep):
    step_class = VerifyEnvCoreProtocol
    example = {
        "id": "proto",
        "type": "verify_env_core_protocol",
        "env_id": "tidy",
        "verifier_id": "proto",
    }


class TestVerifyMcpToolSchema(EnvStep):
    step_class = VerifyMcpToolSchema
    example = {
        "id": "schema",
        "type": "verify_mcp_tool_schema",
        "env_id": "tidy",
        "verifier_id": "schema",
    }


class TestInstallAgent(StepTypeContract):
    step_class = InstallAgent
    plugin_module = HOOKS
    bundle_files = AGENT_FILES
    before = [BOX]
    example = INSTALL


class TestAddSkills(StepTypeContract):
    step_class = AddSkills
    plugin_module = HOOKS
    bundle_files = AGENT_FILES
    before = [BOX, INSTALL]
    example = {
        "id": "skills",
        "type": "add_skills",
        "skills": [{"name": "s", "description": "d", "body": "b"}],
    }


class TestRunDockerContainer(StepTypeContract):
    step_class = RunDockerContainer
    plugin_module = HOOKS
    bundle_files = {"artifacts/ctx/Dockerfile": "FROM scratch\n"}
    before = [BOX]
    example = {
        "id": "run",
        "type": "run_docker_container",
        "sandbox_name": "box",
        "docker_context_artifact_id": "ctx",
    }
    runs = False  # needs Docker: test_run_docker_container.py runs it
