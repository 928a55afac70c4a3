"""The env step types the hook registers: deploy, reset and verify envs, change which tools a
role sees, snapshot an env's state, the env validators, and the env clock and triggers."""

from agentenv_core_steps.steps.deploy_env import DeployEnv
from agentenv_core_steps.steps.env_outcome_verifier import EnvOutcomeVerifier
from agentenv_core_steps.steps.modify_env_tool_access import ModifyEnvToolAccess
from agentenv_core_steps.steps.register_env_triggers import RegisterEnvTriggers
from agentenv_core_steps.steps.reset_env import ResetEnv
from agentenv_core_steps.steps.snapshot_env import SnapshotEnv
from agentenv_core_steps.steps.sync_env_clock import SyncEnvClock
from agentenv_core_steps.steps.verify_env_card import VerifyEnvCard
from agentenv_core_steps.steps.verify_env_core_protocol import VerifyEnvCoreProtocol
from agentenv_core_steps.steps.verify_mcp_tool_schema import VerifyMcpToolSchema

ENV_STEP_TYPES = (
    DeployEnv,
    ResetEnv,
    EnvOutcomeVerifier,
    ModifyEnvToolAccess,
    SnapshotEnv,
    VerifyEnvCard,
    VerifyEnvCoreProtocol,
    VerifyMcpToolSchema,
    SyncEnvClock,
    RegisterEnvTriggers,
)
