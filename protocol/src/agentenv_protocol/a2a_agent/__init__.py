"""Author A2A agents the AgentEnv way: `@a2a_agent` on an `AgentEnvAgent` subclass, typed
config (`AgentConfig`), typed parts (`TextPart`, `DataPart`, `FilePart`), `TaskRequest` in,
`TaskResult` out, standard extensions (`AGENT_CONFIG_V1`, `MCP_CONFIG_V1`, `TRAJECTORY_V1`,
`TRIGGERS_V1`, `PEER_AGENTS_V1`, ...) and custom ones (`extension`, `custom_extension`).

`framework` holds the decorator and app, `tasks` and `parts` the values `run` sees,
`extensions` the definitions, `registry` which method serves which operation, `defaults` the
SDK's own handlers, `runtime` the per-agent state and task execution (served by the A2A server
of `agentenv_protocol.agent`), `triggers` the turn-based trigger engine. `peer_agents`,
`staging` and `proxy` add their extensions. Names load on first use.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

_EXPORTS: dict[str, str] = {
    # the values `run` sees and returns
    "TextPart": "parts",
    "DataPart": "parts",
    "FilePart": "parts",
    "TaskPart": "parts",
    "AgentConfig": "tasks",
    "WriteOnly": "tasks",
    "Usage": "tasks",
    "NativeTrajectory": "tasks",
    "TaskOutcome": "tasks",
    "TaskError": "tasks",
    "TaskResult": "tasks",
    "TaskResultBuilder": "tasks",
    "TaskProgress": "tasks",
    "TaskStreamItem": "tasks",
    "TaskRequest": "tasks",
    # extension definitions and decorators
    "ImplementationOwner": "extensions",
    "FieldSchema": "extensions",
    "RequestVariant": "extensions",
    "RequestDefinition": "extensions",
    "OperationDefinition": "extensions",
    "OperationReference": "extensions",
    "ExtensionDefinition": "extensions",
    "ExtensionActivation": "extensions",
    "enable": "extensions",
    "extension": "extensions",
    "custom_extension": "extensions",
    "AGENT_CONFIG_V1": "extensions",
    "MCP_CONFIG_V1": "extensions",
    "TRAJECTORY_V1": "extensions",
    "TRIGGERS_V1": "extensions",
    "SKILL_CONFIG_V1": "extensions",
    "SNAPSHOT_V1": "extensions",
    "PEER_AGENTS_V1": "extensions",
    "ATTRIBUTION_PROBE_V1": "extensions",
    "INSTALL_V1": "extensions",
    "STANDARD_EXTENSIONS": "extensions",
    "TriggerRegisterRequest": "triggers",
    "TriggerDecideRequest": "triggers",
    "McpAddRequest": "defaults",
    "TaskTrajectoryRequest": "defaults",
    "ContextTrajectoryRequest": "defaults",
    "DefaultExtensionHandlers": "defaults",
    "ExtensionRegistry": "registry",
    "RegisteredExtension": "registry",
    "RegisteredOperation": "registry",
    "build_registry": "registry",
    # the agent and its app
    "A2AAgentApplication": "framework",
    "AgentEnvAgent": "framework",
    "AgentIdentity": "framework",
    "a2a_agent": "framework",
    "create_app": "framework",
    "serve": "framework",
    # other helpers' modules
    "proxy": "proxy",
    "ProxyActionState": "proxy",
    "ProxyAgent": "proxy",
    "PROXY_V1": "proxy",
    "StagingStore": "staging",
    "staging_routes": "staging",
    "STAGING_V1_URI": "staging",
    "STAGING_ENDPOINT": "staging",
    "PeerAgentsSetRequest": "peer_agents",
    "PeerAgent": "peer_agents",
    # the object-transfer requests of trajectory/snapshot operations (agent.transfers)
    "TrajectoryWriteObjects": "..agent.transfers",
    "TaskObjectTrajectoryRequest": "..agent.transfers",
    "ContextObjectTrajectoryRequest": "..agent.transfers",
    "TrajectoryUploadedObjects": "..agent.transfers",
    "TrajectoryObjectsResponse": "..agent.transfers",
    "SnapshotWriteObjects": "..agent.transfers",
    "SnapshotReadObjects": "..agent.transfers",
    "ObjectSnapshotSaveRequest": "..agent.transfers",
    "SnapshotUploadedObjects": "..agent.transfers",
    "ObjectSnapshotSaveResponse": "..agent.transfers",
    "ObjectSnapshotLoadRequest": "..agent.transfers",
    "ObjectSnapshotLoadResponse": "..agent.transfers",
    "NamespaceChangelogEnableRequest": "..agent.transfers",
    "NamespaceChangelogEnableResponse": "..agent.transfers",
    "ChangelogIncrement": "..agent.transfers",
    "ObjectChangelogApplyRequest": "..agent.transfers",
    "ObjectChangelogApplyResponse": "..agent.transfers",
    # object transfers, re-exported from agentenv_protocol.transfers
    "HttpGetGrant": "..transfers",
    "HttpPostPolicyGrant": "..transfers",
    "HttpPutGrant": "..transfers",
    "NamespaceUploader": "..transfers",
    "ReadObject": "..transfers",
    "TransferError": "..transfers",
    "Uploaded": "..transfers",
    "WriteNamespaceGrant": "..transfers",
    "WriteObject": "..transfers",
    "download": "..transfers",
    "upload": "..transfers",
}


def _present(module: str) -> bool:
    """Whether the module behind a name is installed (looked up, not imported)."""
    if module.startswith(".."):
        return True
    return importlib.util.find_spec(f"{__name__}.{module}") is not None


__all__ = sorted(name for name, module in _EXPORTS.items() if _present(module))


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if module.startswith(".."):
        loaded = importlib.import_module("agentenv_protocol." + module[2:])
    else:
        loaded = importlib.import_module(f"{__name__}.{module}")
    # `proxy` names the module itself when the module defines no `proxy` of its own
    value = loaded if name == module and not hasattr(loaded, name) else getattr(loaded, name)
    globals()[name] = value
    return value
