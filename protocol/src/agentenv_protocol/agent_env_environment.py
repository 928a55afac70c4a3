"""Import path kept from the existing SDK: environments that import the author API from
`agentenv_protocol.agent_env_environment` keep working."""

from agentenv_protocol.applications import (
    AgentEnvApplication,
    AgentEnvFastMCPApplication,
    AgentEnvStarletteApplication,
    create_fastmcp_app,
)
from agentenv_protocol.authoring import (
    add_data,
    environment_card,
    extension,
    get_data,
    reset_data,
    tool,
)
from agentenv_protocol.errors import AgentEnvError
from agentenv_protocol.mounting import injecting
from agentenv_protocol.server import AgentEnvEnvironment, EnvironmentApp
from agentenv_protocol.types import HIDDEN_BY_DEFAULT_META_KEY

__all__ = [
    "HIDDEN_BY_DEFAULT_META_KEY",
    "AgentEnvApplication",
    "AgentEnvEnvironment",
    "AgentEnvFastMCPApplication",
    "AgentEnvStarletteApplication",
    "create_fastmcp_app",
    "injecting",
    "AgentEnvError",
    "EnvironmentApp",
    "add_data",
    "environment_card",
    "extension",
    "get_data",
    "reset_data",
    "tool",
]
