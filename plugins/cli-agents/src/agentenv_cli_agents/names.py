"""The agent kind names this plugin registers, readable without importing the harnesses (the
hook registers each kind by import path, so `run hello` imports none of them)."""

from __future__ import annotations

#: harness name -> the reference's other names for it
KIND_NAMES: dict[str, tuple[str, ...]] = {
    "claude-code": ("claude",),
    "codex": ("codex-cli",),
    "gemini": ("gemini-cli",),
    "opencode": (),
    "pi": (),
}


def kind_class_name(name: str) -> str:
    """The agent kind class of harness name or alias `name` (`claude-code` -> ClaudeCodeAgent),
    an attribute of `agentenv_cli_agents.kind`."""
    return "".join(p.title() for p in name.replace("-", " ").split()) + "Agent"


#: Names of the reference's agents that resolve here but cannot run, with what is missing
#: (`unavailable.py` makes each a kind whose deploy fails with this).
MISSING = {
    "openhands": (
        "the reference's OpenHands agent is the openhands-sdk and openhands-tools packages "
        "(PyPI), which need Python 3.12 or newer; the local and Docker sandboxes here have "
        "Python 3.11 (Debian bookworm). Run it as an a2a_agent from an agent folder whose "
        "Dockerfile starts from a Python 3.12 image, or pick a CLI agent (claude-code, codex, "
        "gemini, opencode, pi)"
    ),
}


def unavailable_class_name(name: str) -> str:
    """The kind class of unavailable name `name`, an attribute of `agentenv_cli_agents.unavailable`."""
    return f"{name.title()}Unavailable"
