"""The built-in step types, one module each; `STEP_TYPES` is what the hook registers."""

from agentenv_core_steps.steps.aggregate_verifiers import AggregateVerifiers
from agentenv_core_steps.steps.collect_artifacts import CollectArtifacts
from agentenv_core_steps.steps.deploy_sandbox import DeploySandbox
from agentenv_core_steps.steps.load_artifact import LoadArtifact
from agentenv_core_steps.steps.run_code import RunCode
from agentenv_core_steps.steps.run_docker_container import RunDockerContainer
from agentenv_core_steps.steps.teardown_sandboxes import TeardownSandboxes
from agentenv_core_steps.steps.verify_sandbox import VerifySandbox

STEP_TYPES = (
    DeploySandbox,
    LoadArtifact,
    VerifySandbox,
    RunCode,
    RunDockerContainer,
    TeardownSandboxes,
    AggregateVerifiers,
    CollectArtifacts,
)

__all__ = [c.__name__ for c in STEP_TYPES] + ["STEP_TYPES"]
