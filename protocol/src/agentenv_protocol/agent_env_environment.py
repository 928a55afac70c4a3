"""Import path kept from the existing SDK: environments that import the author API from
`agentenv_protocol.agent_env_environment` keep working."""

from .authoring import add_data, environment_card, extension, get_data, reset_data, tool
from .errors import AgentEnvError
from .server import AgentEnvEnvironment, EnvironmentApp

__all__ = ["AgentEnvEnvironment", "AgentEnvError", "EnvironmentApp", "add_data", "environment_card", "extension",
           "get_data", "reset_data", "tool"]
