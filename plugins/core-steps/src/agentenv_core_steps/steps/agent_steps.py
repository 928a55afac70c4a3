"""The agent step types: deploy, install and prompt agents, give them skills, and the
verifiers that grade them."""

from agentenv_core_steps.steps.add_skills import AddSkills
from agentenv_core_steps.steps.agent_prompt_response_verifier import AgentPromptResponseVerifier
from agentenv_core_steps.steps.deploy_agent import DeployAgent
from agentenv_core_steps.steps.install_agent import InstallAgent
from agentenv_core_steps.steps.prompt_agent import PromptAgent
from agentenv_core_steps.steps.rubrics_verifier import RubricsVerifier
from agentenv_core_steps.steps.run_container_unit_tests_verifier import (
    RunContainerUnitTestsVerifier,
)
from agentenv_core_steps.steps.tool_call_verifier import ToolCallVerifier

AGENT_STEP_TYPES = [
    DeployAgent,
    InstallAgent,
    AddSkills,
    PromptAgent,
    AgentPromptResponseVerifier,
    RubricsVerifier,
    RunContainerUnitTestsVerifier,
    ToolCallVerifier,
]
