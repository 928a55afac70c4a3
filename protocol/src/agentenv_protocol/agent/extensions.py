"""The agent-side A2A extensions: their URIs, the `params` each advertises on the card (the
shapes the existing AgentEnv SDK publishes), and the caller-side rules for reading them.

A card's operation declares its request as `{required, optional, supported, oneOf}` lists. A
caller sends only what the card declares (`accepted_keys`, `request_accepts`); an agent-config
`set` without `supported` gets no configuration at all, as the existing orchestrator does.
"""

from __future__ import annotations

from typing import Any

from agentenv_protocol.agent.types import (
    AGENT_CONFIG_URI,
    CONFIG_FIELDS,
    MCP_CONFIG_URI,
    TRAJECTORY_URI,
)

SKILL_CONFIG_URI = "urn:agentenv:skill-config/v1"
SNAPSHOT_URI = "urn:agentenv:snapshot/v1"
PEER_AGENTS_URI = "urn:agentenv:peer-agents/v1"
STAGING_URI = "urn:agentenv:staging/v1"
INSTALL_URI = "urn:agentenv:install/v1"

#: The trajectory `get` request variants, by name, as the existing SDK names them.
TRAJECTORY_VARIANTS: dict[str, dict[str, list[str]]] = {
    "task": {"required": ["task_id"]},
    "task_objects": {"required": ["task_id", "objects"]},
    "context": {"required": ["context_id"]},
    "context_objects": {"required": ["context_id", "objects"]},
    "task_events": {"required": ["task_id", "after"], "optional": ["limit"]},
    "context_events": {"required": ["context_id", "after"], "optional": ["limit"]},
}

_CONFIG_SCHEMA_TYPES = {
    "model": "string",
    "system_prompt": "string",
    "max_turns": "integer",
    "timeout_seconds": "number",
    "role": "string",
    "model_base_url": "string",
    "model_params": "object",
    "tool_timeout_seconds": "number",
    "harness": "string",
}


def agent_config_params(fields: tuple[str, ...] = CONFIG_FIELDS) -> dict[str, Any]:
    """agent-config/v1: `set` lists the keys it accepts under `request.supported`."""
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            f: {"type": [_CONFIG_SCHEMA_TYPES.get(f, "string"), "null"]} for f in fields
        },
    }
    return {
        "endpoint": "/ext/agent-config",
        "methods": {
            "set": {
                "method": "POST",
                "request": {"supported": sorted(fields), "schema": schema},
            },
            "get": {"method": "GET", "response": {"required": ["config"]}},
        },
    }


def mcp_config_params() -> dict[str, Any]:
    """mcp-config/v1, plus our `remove` (the existing SDK has none; callers ignore it)."""
    return {
        "endpoint": "/ext/mcp-config",
        "methods": {
            "add": {
                "method": "POST",
                "request": {"required": ["url"], "optional": ["headers", "name"]},
            },
            "list": {"method": "GET", "response": {"required": ["mcp_servers"]}},
            "remove": {"method": "DELETE", "request": {"required": ["name"]}},
        },
    }


def skill_config_params() -> dict[str, Any]:
    """skill-config/v1: add a skill inline (`skill_md`) or as a bundle of objects."""
    return {
        "endpoint": "/ext/skill-config",
        "methods": {
            "add": {
                "method": "POST",
                "request": {
                    "required": ["name", "description"],
                    "oneOf": [{"required": ["skill_md"]}, {"required": ["skill_bundle"]}],
                },
                "response": {"required": ["name"]},
            },
            "list": {"method": "GET", "response": {"required": ["skills"]}},
        },
    }


def trajectory_params(*, live: bool = True) -> dict[str, Any]:
    """trajectory/v1: `get` is one of the variants; paging (`after`) only when `live`."""
    names = list(TRAJECTORY_VARIANTS) if live else ["task", "task_objects"]
    return {
        "endpoint": "/ext/trajectory",
        "methods": {
            "get": {
                "method": "POST",
                "request": {"oneOf": [dict(TRAJECTORY_VARIANTS[n]) for n in names]},
            }
        },
    }


def snapshot_params(*, changelog: bool = True) -> dict[str, Any]:
    """snapshot/v1 (save/load objects), with the changelog operations when enabled."""
    methods: dict[str, Any] = {
        "save": {
            "method": "POST",
            "request": {"required": ["context_id", "objects"]},
            "response": {"required": ["context_id", "objects"]},
        },
        "load": {
            "method": "PUT",
            "request": {"required": ["objects"], "optional": ["target_context_id"]},
            "response": {"required": ["context_id"]},
        },
    }
    if changelog:
        methods["enable-changelog"] = {
            "method": "POST",
            "endpoint": "/ext/snapshot/changelog",
            "request": {"required": ["write_namespace"], "optional": ["roots"]},
            "response": {"required": ["roots"]},
        }
        methods["apply-changelog"] = {
            "method": "PUT",
            "endpoint": "/ext/snapshot/changelog",
            "request": {
                "required": ["increments"],
                "optional": ["resume_conversation", "target_context_id"],
            },
            "response": {"required": ["count"], "optional": ["context_id"]},
        }
    return {"endpoint": "/ext/snapshot", "methods": methods}


def operation(card: dict[str, Any], uri: str, name: str) -> dict[str, Any] | None:
    """The card's declaration of extension `uri`'s operation `name`, None when absent."""
    for ext in (card.get("capabilities") or {}).get("extensions") or []:
        if isinstance(ext, dict) and ext.get("uri") == uri:
            methods = (ext.get("params") or {}).get("methods") or {}
            spec = methods.get(name)
            return spec if isinstance(spec, dict) else None
    return None


def request_accepts(request: dict[str, Any] | None, body: dict[str, Any]) -> bool:
    """True when `body` fits the declared request: for some `oneOf` branch (or the request
    itself), every required key is sent and every sent key is declared."""
    request = request or {}
    top_required = set(request.get("required") or [])
    top_declared = (
        top_required | set(request.get("optional") or []) | set(request.get("supported") or [])
    )
    branches = request.get("oneOf") or [{}]
    sent = set(body)
    for branch in branches:
        required = top_required | set(branch.get("required") or [])
        declared = top_declared | required | set(branch.get("optional") or [])
        if required <= sent and sent <= declared:
            return True
    return False


def negotiated_config(card: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """The agent-config `set` body a caller may send: only the keys the card lists as
    `supported` (nothing when the card lists none or lacks the extension)."""
    spec = operation(card, AGENT_CONFIG_URI, "set")
    supported = set(((spec or {}).get("request") or {}).get("supported") or [])
    return {k: v for k, v in settings.items() if k in supported and v is not None}


def trajectory_variant(body: dict[str, Any]) -> str:
    """The name of the one trajectory variant `body` matches; ValueError naming them all."""
    sent = set(body)
    for name, variant in TRAJECTORY_VARIANTS.items():
        required = set(variant["required"])
        if required <= sent and sent <= required | set(variant.get("optional") or []):
            return name
    raise ValueError(
        f"request must match exactly one of variants: {list(TRAJECTORY_VARIANTS)}; "
        f"got keys {sorted(sent)}"
    )


__all__ = [
    "INSTALL_URI",
    "MCP_CONFIG_URI",
    "PEER_AGENTS_URI",
    "SKILL_CONFIG_URI",
    "SNAPSHOT_URI",
    "STAGING_URI",
    "TRAJECTORY_URI",
    "TRAJECTORY_VARIANTS",
    "agent_config_params",
    "mcp_config_params",
    "negotiated_config",
    "operation",
    "request_accepts",
    "skill_config_params",
    "snapshot_params",
    "trajectory_params",
    "trajectory_variant",
]
