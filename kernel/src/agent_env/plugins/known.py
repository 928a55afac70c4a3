"""Where each in-tree feature comes from, so a missing plugin fails with the exact install.

One table, as data: (kind, name) -> the distribution that provides it. The kinds are the
registry kinds ("step type", "env type", "agent", "sandbox provider", the store kinds
"object"/"document"/"secret"/"image"), "bundle source" for a bundle spec's URI scheme,
"folder default" for the plugin that gives an env or agent folder naming no type its type, and
"command" for an `agent-env` command ("init", "plugin add", "openenv").
It lives in the kernel because a hint is needed exactly when the plugin is *not* installed.
"""

from __future__ import annotations

from typing import Any

_CORE = "agentenv-core-steps"
_AWS = "agentenv-aws-stores"
_GCP = "agentenv-gcp-stores"
_DOCKER = "agentenv-docker-sandbox"
_HF = "agentenv-hf-hub"
_OPENENV = "agentenv-openenv"
_RAY = "agentenv-ray-runner"
_CLI_AGENTS = "agentenv-cli-agents"
_LIFECYCLE = "agentenv-plugin-lifecycle"
_SCAFFOLD = "agentenv-scaffold"
_EXPLORER = "agentenv-explorer"
_GRADING = "agentenv-grading"
_TRAINING_DATA = "agentenv-training-data"
_STORED = "agentenv-stored-entities"
_REPORTING = "agentenv-reporting"
_CACHES = "agentenv-caches"
_STORED_COMMANDS = ("task", "eval", "env", "agent", "a2a-agent", "artifact", "bundle", "entity")
_CLI_AGENT_NAMES = (
    "claude-code",
    "claude",
    "codex",
    "codex-cli",
    "gemini",
    "gemini-cli",
    "opencode",
)

#: Distribution -> the pip command that installs it (default: `pip install <dist>`).
INSTALL_COMMANDS: dict[str, str] = {
    _AWS: "pip install 'agentenv-framework[aws]'",
    _GCP: "pip install 'agentenv-framework[gcp]'",
    _DOCKER: f"pip install {_DOCKER}  (included in: pip install agentenv-framework)",
    _OPENENV: "pip install 'agentenv-framework[openenv]'",
    _RAY: "pip install 'agentenv-framework[ray]'",
    _LIFECYCLE: f"pip install {_LIFECYCLE}  (included in: pip install agentenv-framework)",
    _SCAFFOLD: f"pip install {_SCAFFOLD}  (included in: pip install agentenv-framework)",
    _EXPLORER: f"pip install {_EXPLORER}  (included in: pip install agentenv-framework)",
    _GRADING: f"pip install {_GRADING}  (included in: pip install agentenv-framework)",
    _TRAINING_DATA: (
        f"pip install {_TRAINING_DATA}  (included in: pip install agentenv-framework)"
    ),
    _STORED: f"pip install {_STORED}  (included in: pip install agentenv-framework)",
    _REPORTING: f"pip install {_REPORTING}  (included in: pip install agentenv-framework)",
    _CACHES: f"pip install {_CACHES}  (included in: pip install agentenv-framework)",
}

_CORE_STEP_TYPES = (
    "deploy_sandbox",
    "load_artifact",
    "verify_sandbox",
    "deploy_env",
    "env_outcome_verifier",
    "deploy_agent",
    "prompt_agent",
    "agent_prompt_response_verifier",
    "rubrics_verifier",
    "run_container_unit_tests_verifier",
    "tool_call_verifier",
    "aggregate_verifiers",
    "run_code",
    "reset_env",
    "teardown_sandboxes",
    "sync_env_clock",
    "register_env_triggers",
    "collect_artifacts",
    "modify_env_tool_access",
    "run_docker_container",
    "install_agent",
    "add_skills",
    "snapshot_env",
    "snapshot_task",
    "verify_env_card",
    "verify_env_core_protocol",
    "verify_mcp_tool_schema",
)

#: (kind, name) -> distribution.
KNOWN: dict[tuple[str, str], str] = {
    **{("step type", name): _CORE for name in _CORE_STEP_TYPES},
    ("env type", "mcp_server"): _CORE,
    ("env type", "computer_driver"): _CORE,
    # the plugin whose types declare `default_for` env / agent folders (a folder naming no type)
    ("folder default", "env"): _CORE,
    ("folder default", "agent"): _CORE,
    **{("agent", name): _CORE for name in ("scripted", "oracle", "tool-loop", "a2a_agent")},
    **{("agent", name): _CLI_AGENTS for name in _CLI_AGENT_NAMES},
    ("bundle source", "hf"): _HF,
    ("agent", "openenv"): _OPENENV,
    ("object", "s3"): _AWS,
    ("document", "dynamodb"): _AWS,
    ("secret", "secretsmanager"): _AWS,
    ("image", "ecr"): _AWS,
    ("object", "gcs"): _GCP,
    ("document", "firestore"): _GCP,
    ("secret", "secretmanager"): _GCP,
    ("image", "artifactregistry"): _GCP,
    ("image", "docker"): _DOCKER,
    ("sandbox provider", "docker"): _DOCKER,
    ("runner", "ray"): _RAY,
    ("command", "init"): _SCAFFOLD,
    ("command", "plugin new"): _SCAFFOLD,
    ("command", "plugin add"): _LIFECYCLE,
    ("command", "plugin remove"): _LIFECYCLE,
    ("command", "openenv"): _OPENENV,
    ("command", "up"): _EXPLORER,
    ("command", "runs regrade"): _GRADING,
    ("command", "runs replay"): _GRADING,
    ("command", "runs list"): _REPORTING,
    ("command", "runs show"): _REPORTING,
    ("command", "runs export"): _REPORTING,
    ("command", "runs compare"): _REPORTING,
    ("command", "cache"): _CACHES,
    ("command", "tasks"): _GRADING,
    ("step type", "call_reward_verifier"): _GRADING,
    **{("agent", name): _GRADING for name in ("do-nothing", "replay")},
    ("export format", "chat-jsonl"): _TRAINING_DATA,
    ("export format", "parquet"): _TRAINING_DATA,
    ("dataset destination", "hf"): _HF,
    **{("command", name): _STORED for name in _STORED_COMMANDS},
}

#: Kinds whose names are configured in `[stores]`/`[sandbox]` settings (see `install_hint`).
BACKEND_KINDS = ("object", "document", "secret", "image", "sandbox provider")


def install_command(dist: str) -> str:
    """The command that installs distribution `dist` with the installer agent-env runs under
    (pip, uv tool, uvx, pipx, uv project)."""
    from agent_env.plugins.installer import install_hint

    return install_hint(dist, INSTALL_COMMANDS.get(dist, f"pip install {dist}"))


#: (backend kind, name) -> pip command, for the store and sandbox error messages: built on
#: first use (`__getattr__`), as wording each command looks at the installation's files.
KNOWN_BACKENDS: dict[tuple[str, str], str]


def __getattr__(name: str) -> Any:
    if name == "KNOWN_BACKENDS":
        table = {key: install_command(d) for key, d in KNOWN.items() if key[0] in BACKEND_KINDS}
        globals()["KNOWN_BACKENDS"] = table
        return table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def commands_under(group: str) -> list[str]:
    """The names of the in-tree plugins' commands directly under `group` ("" for the root,
    "plugin" for `plugin`)."""
    prefix = f"{group} " if group else ""
    names = []
    for kind, path in KNOWN:
        if kind == "command" and path.startswith(prefix) and " " not in path[len(prefix) :]:
            names.append(path[len(prefix) :])
    return names


#: Step types of the existing agent-env (0.9.x) that no plugin here provides, so a task that
#: names one is told why (docs/compatibility.md lists them).
REFERENCE_ONLY_STEP_TYPES = frozenset(
    {
        "apply_server_config",
        "build_mcp_cli",
        "combine_universe_verdicts",
        "deploy_human_agent",
        "peer_agents",
        "register_agent_triggers",
        "review",
        "snapshot_agent_state",
        "validation_gate_aggregator",
        "verify_a2a_agent_card",
        "verify_a2a_agent_config_identity",
        "verify_a2a_agent_mcp",
        "verify_a2a_core_protocol",
        "verify_a2a_install",
        "verify_a2a_modalities",
        "verify_a2a_peer_agents",
        "verify_a2a_role",
        "verify_a2a_skill_config",
        "verify_a2a_snapshot",
        "verify_a2a_system_prompt",
        "verify_a2a_trajectory",
        "verify_mcp_env_assessment",
        "verify_spec_conformance",
        "verify_universe_load_export_roundtrip",
    }
)


def distribution(kind: str, name: str) -> str | None:
    """The distribution that provides `name` of `kind`, or None when no in-tree plugin does."""
    return KNOWN.get((kind, name))


def install_hint(kind: str, name: str) -> str | None:
    """The pip command for an in-tree `name` of `kind`, or None when we don't ship it. A kind
    that is not in the table (e.g. "" from a settings table) matches a backend of any kind."""
    dist = distribution(kind, name)
    if dist is None and kind not in {k for k, _ in KNOWN}:
        for (known_kind, known), candidate in KNOWN.items():
            if known == name and known_kind in BACKEND_KINDS:
                return install_command(candidate)
    return None if dist is None else install_command(dist)
