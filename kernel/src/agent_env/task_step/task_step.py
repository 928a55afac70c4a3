"""`TaskStep`, the base class of a step type written for the existing product (see the package
docstring for an example), with its `depends_on` and `retry_config` values."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, ClassVar

from agent_env.task_step.context import TaskStepContext


@dataclass
class TaskStepDependency:
    """One `depends_on` entry: the id of a step that must finish first."""

    task_step_id: str


@dataclass
class RetryConfig:
    """Where a failed step's retry starts, and how many retries it gets."""

    retry_from_step_id: str
    max_retries: int = 1


def _dependencies(raw: Any) -> list[TaskStepDependency] | None:
    if raw is None:
        return None
    if not isinstance(raw, (list, tuple)):
        raise ValueError(f"depends_on is a list of step ids, not {raw!r}")
    out = []
    for dep in raw:
        if isinstance(dep, TaskStepDependency):
            out.append(dep)
        elif isinstance(dep, str):
            out.append(TaskStepDependency(dep))
        elif isinstance(dep, dict) and isinstance(dep.get("task_step_id"), str):
            out.append(TaskStepDependency(dep["task_step_id"]))
        else:
            raise ValueError(f'a depends_on entry is a step id or {{"task_step_id": id}}: {dep!r}')
    return out


class TaskStep(abc.ABC):
    """Base of a legacy step type: set `type`, implement `from_dict` and `execute`."""

    type: ClassVar[str] = "task_step"

    def __init__(
        self,
        id: str,
        version: int | None = None,
        depends_on: list[Any] | None = None,
        fail_task_on_error: bool = True,
        retry_config: RetryConfig | dict[str, Any] | None = None,
    ):
        self.id = id
        self.version = version
        self.depends_on = _dependencies(depends_on)
        self.fail_task_on_error = fail_task_on_error
        if isinstance(retry_config, dict):
            retry_config = RetryConfig(
                retry_from_step_id=retry_config["retry_from_step_id"],
                max_retries=retry_config.get("max_retries", 1),
            )
        self.retry_config = retry_config

    @abc.abstractmethod
    async def execute(self, context: TaskStepContext) -> TaskStepContext | None:
        """Do the step's work; return the context (or None: `context` as changed in place)."""

    def preflight(self) -> list[str]:
        """Problems found before a run, one message each (reported by `agent-env check`)."""
        return []

    def config_problems(self) -> list[str]:
        """Problems in the step's own fields, one message each."""
        return []

    @classmethod
    def _base_from_dict(cls, data: dict[str, Any]) -> dict[str, Any]:
        """The base class's constructor arguments read from a step object."""
        return {
            "id": data["id"],
            "version": data.get("version"),
            "depends_on": _dependencies(data.get("depends_on")),
            "fail_task_on_error": data.get("fail_task_on_error", True),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskStep:
        """Build the step from its task JSON object; every subclass implements it."""
        raise NotImplementedError(f"{cls.__name__} must implement from_dict")
