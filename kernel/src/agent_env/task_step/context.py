"""`TaskStepContext`: what a legacy step (`agent_env.task_step.TaskStep`) reads and returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TaskStepContext:
    """What a legacy step reads and returns: `metadata` is carried from step to step of a task
    instance (it must stay JSON); the deployed lists are empty here (our steps keep that state
    in the task state instead)."""

    deployed_envs: list[Any] = field(default_factory=list)
    deployed_agents: list[Any] = field(default_factory=list)
    deployed_sandboxes: list[Any] = field(default_factory=list)
    prompt_responses: list[Any] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    agent_model: str | None = None
    default_agent_model: str | None = None
    agent_artifact_id: str | None = None
    agent_harness: str | None = None
    instance_id: str | None = None

    def heartbeat(self) -> None:
        """Tell the runner the step is alive; nothing to do here (steps have no lease)."""

    def record_model(self, role: str, step_id: str, model: str | None) -> None:
        """Record the model `step_id` ran `role` on, under `metadata["models"]`."""
        self.metadata.setdefault("models", {}).setdefault(role, {})[step_id] = model
