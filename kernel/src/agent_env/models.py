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

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from agent_env.scoring import ScoreAggregator, aggregate_score, random_verifier_id

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.context import StepContext

#: The attrs field metadata key `compat_ignored` sets; its value is the reason shown to users.
COMPAT_IGNORED = "agent_env.compat_ignored"


def compat_ignored(reason: str, *, default: Any = None) -> Any:
    """An attrs field that files written for the existing product may set and that we do not
    use (yet): structuring accepts it, and the loader warns once that it is ignored, naming
    `reason`. A truly unknown field stays an error::

        live_trajectory: bool = compat_ignored("no live trajectory streaming", default=False)
    """
    return attrs.field(default=default, metadata={COMPAT_IGNORED: reason})


def ignored_reason(field: attrs.Attribute[Any]) -> str | None:
    """The reason a field is accepted but ignored (see `compat_ignored`), else None."""
    reason = field.metadata.get(COMPAT_IGNORED)
    return reason if isinstance(reason, str) else None


@attrs.frozen(kw_only=True)
class RetryConfig:
    """Roll back the span starting at `retry_from_step_id` and run it again, up to N times."""

    retry_from_step_id: str
    max_retries: int = 1


def _field_names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):  # ("default_model") without the comma: say so, don't split it
        raise TypeError(f"RunOverride fields: a tuple of field names, not the string {value!r}")
    return tuple(value)


@attrs.frozen
class RunOverride:
    """How a step type takes a run option such as `--judge-model`: the fields the option's
    value replaces for one run (the stored task stays as written), and, when the type accepts
    the option but does not act on it yet, why (the run says so instead of "applies to")::

        run_overrides = {"judge_model": RunOverride(("default_model",))}
    """

    fields: tuple[str, ...] = attrs.field(converter=_field_names)
    unused: str | None = attrs.field(default=None, kw_only=True)


@attrs.frozen(kw_only=True)
class Step:
    """Base class of every step type (the common fields of DESIGN.md §3.5)."""

    type: ClassVar[str] = ""
    #: True for verifier steps (they record scores under `verifiers.<verifier_id>`); the
    #: `StepTypeContract` checks that such a step has a `verifier_id`.
    is_verifier: ClassVar[bool] = False
    #: True for a step whose score combines other verifiers' scores: when a task has one, only
    #: the aggregates decide the outcome (`engine.outcome.counted_scores`).
    is_aggregate: ClassVar[bool] = False
    #: False for a step whose effect reaches outside the task's sandboxes (a payment, a message
    #: sent, a row in a shared database): a resumed run never runs it twice. Its start is
    #: journaled; when a resume would run it again (it was running at the interruption, or a
    #: sandbox it depends on is gone) the trial fails as `infrastructure` and is not retried.
    rerunnable: ClassVar[bool] = True
    #: Which fields name bundle entities, by kind ("artifact", "env", "agent") -> field paths
    #: such as `"artifacts[].id"`: `agent-env check` reports a name that matches nothing, and
    #: bundle aliases are resolved in them. A type that declares none names no entity. Kind
    #: "tool" marks fields naming a tool: a name no env of the task serves draws a warning.
    bundle_refs: ClassVar[Mapping[str, tuple[str, ...]] | None] = None
    #: The run options (`RunOptions` field names: "provider" for `--sandbox`, "judge_model",
    #: "user_model") this type takes, and which of its fields each one replaces for that run
    #: (`agent_env.runs.overrides`). A type that declares none keeps its fields whatever the
    #: flags; the fields "provider" replaces are also checked to name installed providers.
    run_overrides: ClassVar[Mapping[str, RunOverride]] = {}

    id: str
    depends_on: list[str] | None = None
    fail_task_on_error: bool = True
    retry_config: RetryConfig | None = None

    async def execute(self, ctx: StepContext) -> None:
        """Do the step's work; record results through `ctx`; raise `StepFailed` on failure."""
        raise NotImplementedError(f"step type {self.type!r} does not implement execute()")

    def has_solution(self) -> bool:
        """True when this step ships the task's solution (what an oracle agent replays)."""
        return False

    def check(self, bundle: Any) -> list[str]:
        """Static checks against the parsed bundle (e.g. a missing artifact); one message each."""
        return []


@attrs.frozen(kw_only=True)
class VerifierStep(Step):
    """Base of a step that scores the task: its result rows and score go under
    `verifiers.<verifier_id>`. Subclasses compute rows and end with `self.record(ctx, rows, ...)`;
    a subclass may redeclare `score_aggregator` with another default."""

    is_verifier: ClassVar[bool] = True

    score_aggregator: ScoreAggregator = "all_pass"
    verifier_id: str = attrs.field(factory=random_verifier_id)

    def record(
        self,
        ctx: StepContext,
        results: list[dict[str, Any]],
        summary: str,
        *,
        counted: list[dict[str, Any]] | None = None,
    ) -> float:
        """Aggregate `counted` (default: all `results`) with `score_aggregator`, record the rows
        and the score, log `"<verifier_id>: <summary>, score <s>"`; returns the score."""
        score = aggregate_score(results if counted is None else counted, self.score_aggregator)
        ctx.record_verifier(self.verifier_id, results, score)
        ctx.log(f"{self.verifier_id}: {summary}, score {score:g}")
        return score
