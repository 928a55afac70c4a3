"""The env step types (`deploy_env`, `reset_env`, `env_outcome_verifier`) the hook registers."""

from agentenv_core_steps.steps.deploy_env import DeployEnv
from agentenv_core_steps.steps.env_outcome_verifier import EnvOutcomeVerifier
from agentenv_core_steps.steps.reset_env import ResetEnv

ENV_STEP_TYPES = (DeployEnv, ResetEnv, EnvOutcomeVerifier)
