"""Agent names of the reference that resolve here but cannot run: `openhands` is the
OpenHands software agent SDK (PyPI `openhands-sdk`, `openhands-tools`), which needs Python
3.12+, while the sandboxes this project builds (Debian bookworm) have Python 3.11 and a
managed Python is downloaded from GitHub, not a package registry. Deploying one fails with
what is missing instead of a "no such agent"."""

from __future__ import annotations

from typing import Any, ClassVar

from agent_env.agents import AgentConfig, AgentKind, AgentSpec, PromptRequest
from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agentenv_cli_agents.names import MISSING, unavailable_class_name


class UnavailableAgentKind(AgentKind):
    """A known name whose deploy says what is missing (subclassed per name in `MISSING`)."""

    type: ClassVar[str] = ""
    missing: ClassVar[str] = ""
    config_model = AgentConfig

    async def deploy(self, ctx: StepContext, spec: AgentSpec) -> dict[str, Any]:
        raise StepFailed(
            ctx.step_id,
            f"agent {spec.name!r} ({self.type}) cannot run here: {self.missing}",
            failure_class="agent",
        )

    async def prompt(self, ctx: StepContext, record: dict[str, Any], request: PromptRequest) -> Any:
        raise StepFailed(ctx.step_id, f"{self.type}: {self.missing}", failure_class="agent")


def unavailable_kinds() -> list[type[UnavailableAgentKind]]:
    return [
        type(
            unavailable_class_name(name),
            (UnavailableAgentKind,),
            {"type": name, "missing": why, "__doc__": f"{name}: cannot run here."},
        )
        for name, why in MISSING.items()
    ]


# each kind is a module attribute, so the hook registers it by import path
globals().update({cls.__name__: cls for cls in unavailable_kinds()})
