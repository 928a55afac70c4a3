"""Core attrs models shared across the kernel and plugins: steps and their common fields.

Every step type is an attrs class that subclasses `Step`, sets the class attribute `type`
and adds its own fields; the bundle parser structures each task JSON object into the class
the step-type registry holds for its `"type"` (unknown keys are errors)::

    @attrs.frozen(kw_only=True)
    class Shout(Step):
        type: ClassVar[str] = "shout"
        text: str

        async def execute(self, ctx: StepContext) -> None:
            ctx.set("outputs", self.id, value={"text": self.text.upper()})
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import attrs

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.context import StepContext


@attrs.frozen(kw_only=True)
class RetryConfig:
    """Roll back the span starting at `retry_from_step_id` and run it again, up to N times."""

    retry_from_step_id: str
    max_retries: int = 1


@attrs.frozen(kw_only=True)
class Step:
    """Base class of every step type (the common fields of DESIGN.md §3.5)."""

    type: ClassVar[str] = ""
    #: True for verifier steps: the engine reads their `verifier_id` scores into the outcome.
    is_verifier: ClassVar[bool] = False

    def has_solution(self) -> bool:
        return False

    id: str
    depends_on: list[str] | None = None
    fail_task_on_error: bool = True
    retry_config: RetryConfig | None = None

    async def execute(self, ctx: StepContext) -> None:
        """Do the step's work; record results through `ctx`; raise `StepFailed` on failure."""
        raise NotImplementedError(f"step type {self.type!r} does not implement execute()")

    def check(self, bundle: Any) -> list[str]:
        """Static checks against the parsed bundle (e.g. a missing artifact); one message each."""
        return []
