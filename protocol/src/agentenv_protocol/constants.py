"""Constants of the AgentEnv protocol v1 (version, paths, method names, extension URIs, port).

Kept apart from the wire models in `types` (which need pydantic) so that code needing only a
path or the default port, such as a plugin's env type imported by every `agent-env run`, does
not pay pydantic's import (~70 ms).
"""

from __future__ import annotations

PROTOCOL_VERSION = "1.0"
WELL_KNOWN_PATH = "/.well-known/agent-env.json"
RPC_PATH = "/agentenv"
EXT_PREFIX = f"{RPC_PATH}/ext"
MCP_PATH = "/mcp"
MCP_TRANSPORT = "mcp"
READY_PATH = "/healthz"

METHOD_RESET = "data/reset"
METHOD_ADD = "data/add"
METHOD_GET = "data/get"

CLOCK_EXTENSION_URI = "urn:agentenv:clock/v1"
DATA_OBJECTS_EXTENSION_URI = "urn:agentenv:data-objects/v1"
INTAKE_EXTENSION_URI = "urn:agentenv:intake/v1"

DEFAULT_HOST = "0.0.0.0"
DEFAULT_PORT = 18765


#: tools/list `_meta` key of a tool a gateway hides from every role until a rule names it.
HIDDEN_BY_DEFAULT_META_KEY = "agentenv.io/hiddenByDefault"

#: The header a gateway adds to every request it forwards to an env, carrying the env's secret.
ENV_SECRET_HEADER = "agentenv-env-secret"
#: The environment variable the deploy step passes the env's secret in; an env server started
#: with it answers only requests carrying the secret (the card and `/healthz` stay open).
ENV_SECRET_ENV = "AGENTENV_ENV_SECRET"
