"""Import path kept from the existing SDK: environments that import the author API from
`agentenv_protocol.agent_env_environment` keep working."""

from agentenv_protocol.authoring import (
    add_data,
    environment_card,
    extension,
    get_data,
    reset_data,
    tool,
)
from agentenv_protocol.errors import AgentEnvError
from agentenv_protocol.server import AgentEnvEnvironment, EnvironmentApp

__all__ = [
    "AgentEnvEnvironment",
    "AgentEnvError",
    "EnvironmentApp",
    "add_data",
    "environment_card",
    "extension",
    "get_data",
    "reset_data",
    "tool",
]
