"""The step base classes of the existing product (`agentenv-framework`), for plugins written
for it, under the import paths it documents (`agent_env.task_step`, `.task_step.task_step`,
`.task_step.context`).

Such a plugin subclasses `TaskStep`, names its class in an `agent_env.task_steps` entry point
(the entry-point name is the step type) and runs here unchanged through the legacy adapter
(`agent_env.plugins.legacy`), which wraps it as one of our step types::

    from agent_env.task_step import TaskStep, TaskStepContext

    class Greet(TaskStep):
        type = "greet"

        def __init__(self, id, version=None, name="world", **base):
            super().__init__(id, version, **base)
            self.name = name

        @classmethod
        def from_dict(cls, data):
            return cls(**cls._base_from_dict(data), name=data.get("name", "world"))

        async def execute(self, context: TaskStepContext) -> TaskStepContext:
            context.metadata["greeting"] = f"hello {self.name}"
            return context

New plugins should write a `agent_env.models.Step` instead (docs/plugins.md).
"""

from agent_env.task_step.context import TaskStepContext
from agent_env.task_step.task_step import RetryConfig, TaskStep, TaskStepDependency

__all__ = ["RetryConfig", "TaskStep", "TaskStepContext", "TaskStepDependency"]
