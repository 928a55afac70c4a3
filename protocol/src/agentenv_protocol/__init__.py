"""The AgentEnv protocol: environment server SDK, client and MCP gateway.

Names load on first use, so `import agentenv_protocol` (or its client) never imports the server
stack (starlette, uvicorn, the mcp server); only touching a server name does.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    # author API (marks only, light)
    "tool": "authoring",
    "reset_data": "authoring",
    "add_data": "authoring",
    "get_data": "authoring",
    "extension": "authoring",
    "environment_card": "authoring",
    # server (heavy)
    "AgentEnvEnvironment": "server",
    "EnvironmentApp": "server",
    "AgentEnvApplication": "applications",
    "AgentEnvFastMCPApplication": "applications",
    "AgentEnvStarletteApplication": "applications",
    "create_fastmcp_app": "applications",
    "injecting": "mounting",
    # context
    "ToolContext": "context",
    "Caller": "context",
    "bound": "context",
    "normalize_role": "context",
    "ROLE_HEADER": "context",
    "ROLE_META_KEY": "context",
    "SESSION_META_KEY": "context",
    "DEFAULT_ROLE": "context",
    # errors
    "AgentEnvError": "errors",
    "ProtocolError": "errors",
    "RpcError": "errors",
    "ParseError": "errors",
    "InvalidRequest": "errors",
    "MethodNotFound": "errors",
    "InvalidParams": "errors",
    "HandlerFailed": "errors",
    "EnvUnavailable": "errors",
    "ToolCallError": "errors",
    "Applied": "errors",
    # client
    "EnvClient": "client",
    "ToolResult": "client",
    "ExtensionCallError": "client_helpers",
    "ToolSession": "tool_client",
    "ToolSessionError": "tool_client",
    "INTAKE_EXTENSION_URI": "client_helpers",
    # wire types
    "EnvironmentCard": "types",
    "EnvironmentCapabilities": "types",
    "EnvironmentExtension": "types",
    "EnvironmentInterface": "types",
    "EnvironmentTool": "types",
    "TextPart": "types",
    "DataPart": "types",
    "FilePart": "types",
    "Part": "types",
    "AddDataRequest": "types",
    "GetDataResponse": "types",
    "ResetDataResponse": "types",
    "AddDataResponse": "types",
    "error_body": "types",
    "PROTOCOL_VERSION": "constants",
    "WELL_KNOWN_PATH": "constants",
    "RPC_PATH": "constants",
    "MCP_PATH": "constants",
    "MCP_TRANSPORT": "constants",
    "READY_PATH": "constants",
    "METHOD_RESET": "constants",
    "METHOD_ADD": "constants",
    "METHOD_GET": "constants",
    "CLOCK_EXTENSION_URI": "constants",
    "DATA_OBJECTS_EXTENSION_URI": "constants",
    "HIDDEN_BY_DEFAULT_META_KEY": "constants",
    "DEFAULT_PORT": "constants",
    "DEFAULT_HOST": "constants",
    # intake, uploaded exports, interface manifests
    "IntakeDeclaration": "intake",
    "IntakeFormat": "intake",
    "intake_extension": "intake",
    "intake_fit_check": "intake",
    "uploaded_file_part": "data_objects",
    "uploaded_object_path": "data_objects",
    "snapshot_state": "snapshots",
    "restore_state": "snapshots",
    "SNAPSHOT_EXTENSION_URI": "snapshots",
    "MANIFEST_VERSION": "manifest",
    "INTERFACE_MANIFEST_PATH": "manifest",
    "GET_INTERFACES_EXTENSION_URI": "manifest",
    "CLI_COMMANDS": "manifest",
    "manifest_compatible": "manifest",
    "InterfaceManifest": "manifest",
    "Entity": "manifest",
    "FieldSpec": "manifest",
    "Relationship": "manifest",
    "Operation": "manifest",
    "ParamSpec": "manifest",
    "Action": "manifest",
    "CliManifest": "manifest",
    "CliEntity": "manifest",
    "CliCommand": "manifest",
    "CliAction": "manifest",
}
_SUBMODULES = {
    "client",
    "constants",
    "gateway",
    "types",
    "errors",
    "context",
    "server",
    "authoring",
    "schema",
    "serving",
    "dataplane",
    "examples",
    "agent_env_environment",
    "tool_context",
    "fastpost",
    "mcp_http",
    "jsonrpc",
    "client_helpers",
    "tool_client",
    "tool_access",
    "output",
    "surface",
    "mounting",
    "applications",
    "intake",
    "data_objects",
    "manifest",
    "transfers",
    "snapshots",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | _SUBMODULES)
