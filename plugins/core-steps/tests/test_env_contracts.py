"""The env step types against the shared StepTypeContract (real engine, local env processes)."""

from __future__ import annotations

from pathlib import Path

from agentenv_core_steps.steps.deploy_env import DeployEnv
from agentenv_core_steps.steps.env_outcome_verifier import EnvOutcomeVerifier
from agentenv_core_steps.steps.reset_env import ResetEnv
from agentenv_testing.contracts import StepTypeContract

HOOKS = "agentenv_core_steps.hooks"
EXAMPLE_ENV = Path(__file__).resolve().parents[3] / "examples" / "notes-local" / "envs" / "notes"
ENV_FILES = {f"envs/notes/{p.name}": p.read_text() for p in EXAMPLE_ENV.iterdir() if p.is_file()}
DEPLOY = {"id": "deploy", "type": "deploy_env", "env_id": "notes"}
VERIFY = """
import asyncio
from agentenv_protocol.client import EnvClient

def verify(mcp_url):
    async def go():
        async with EnvClient(mcp_url.rsplit("/mcp", 1)[0], mcp_path="/mcp") as env:
            return (await env.call_tool("list_notes")).json()
    notes = asyncio.run(go())
    return [{"id": "seeded", "result": notes == ["welcome"], "description": str(notes)}]
"""


class TestDeployEnv(StepTypeContract):
    step_class = DeployEnv
    plugin_module = HOOKS
    bundle_files = ENV_FILES
    example = DEPLOY


class TestResetEnv(StepTypeContract):
    step_class = ResetEnv
    plugin_module = HOOKS
    bundle_files = ENV_FILES
    before = [DEPLOY]
    example = {"id": "reset", "type": "reset_env", "env_id": "notes", "fail_task_on_error": True}


class TestEnvOutcomeVerifier(StepTypeContract):
    step_class = EnvOutcomeVerifier
    plugin_module = HOOKS
    bundle_files = {**ENV_FILES, "artifacts/check/check.py": VERIFY}
    before = [DEPLOY]
    example = {
        "id": "check",
        "type": "env_outcome_verifier",
        "env_id": "notes",
        "file_artifact_id": "check",
        "verifier_id": "seeded",
    }
