"""The adapter plugin for the existing product's `agent_env.task_steps` entry points: each
`TaskStep` subclass becomes one of our step types, written with the public plugin API only.

The adapted step type has one field per parameter of the legacy class's `__init__` (so the
bundle parser's unknown-field errors and did-you-means work as for any step type). At run
time it rebuilds the step object, calls the legacy `from_dict` and `await execute(context)`.
The legacy context's `metadata` is carried between the legacy steps of a task instance under
the state key `legacy.metadata`, and each step's resulting metadata is its `outputs.<id>`.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
from typing import Any, ClassVar

import attrs

from agent_env import hookimpl
from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.models import Step
from agent_env.registry import import_failure
from agent_env.task_step import TaskStep, TaskStepContext

#: The legacy base class's own constructor parameters (our `Step` has them, or drops `version`).
_BASE_PARAMETERS = {"self", "id", "version", "depends_on", "fail_task_on_error", "retry_config"}


class LegacyStepTypeError(TypeError):
    """A legacy entry point does not name a usable `TaskStep` subclass."""


@attrs.frozen(kw_only=True)
class LegacyStep(Step):
    """Base of every adapted step type: runs `legacy_class` (set per adapted type)."""

    legacy_class: ClassVar[type[TaskStep]]

    def _params(self) -> dict[str, Any]:
        base = {f.name for f in attrs.fields(LegacyStep)}
        return {
            f.name: getattr(self, f.name) for f in attrs.fields(type(self)) if f.name not in base
        }

    def _legacy_data(self) -> dict[str, Any]:
        """The step object as the existing product reads it (its `from_dict` input)."""
        data: dict[str, Any] = {"id": self.id, "type": self.type, "version": None}
        data["fail_task_on_error"] = self.fail_task_on_error
        if self.depends_on is not None:
            data["depends_on"] = [{"task_step_id": d} for d in self.depends_on]
        if self.retry_config is not None:
            data["retry_config"] = attrs.asdict(self.retry_config)
        data.update(self._params())
        return data

    def _build(self) -> TaskStep:
        try:
            return self.legacy_class.from_dict(self._legacy_data())
        except Exception as exc:
            raise StepFailed(
                self.id,
                f"legacy step type {self.type!r}: "
                f"{self.legacy_class.__qualname__}.from_dict raised {type(exc).__name__}: {exc}",
            ) from exc

    def check(self, bundle: Any) -> list[str]:
        try:
            legacy = self._build()
        except StepFailed as exc:
            return [exc.reason]
        return [*legacy.config_problems(), *legacy.preflight()]

    async def execute(self, ctx: StepContext) -> None:
        legacy = self._build()
        # a copy: the legacy step mutates it, and state changes only through `ctx.set`
        metadata = copy.deepcopy(dict(ctx.get("legacy", "metadata", default=None) or {}))
        context = TaskStepContext(metadata=metadata, instance_id=ctx.task_instance_id)
        try:
            result = await legacy.execute(context)
        except StepFailed:
            raise
        except Exception as exc:
            raise StepFailed(
                self.id,
                f"legacy step type {self.type!r} raised {type(exc).__name__}: {exc}",
            ) from exc
        out = (result if isinstance(result, TaskStepContext) else context).metadata
        try:
            out = json.loads(json.dumps(out))
        except (TypeError, ValueError) as exc:
            raise StepFailed(
                self.id, f"legacy step type {self.type!r} left context.metadata not JSON: {exc}"
            ) from None
        ctx.set("legacy", "metadata", value=out)
        ctx.set("outputs", self.id, value={"metadata": out})


def _validate(name: str, loaded: Any) -> type[TaskStep]:
    if not (isinstance(loaded, type) and issubclass(loaded, TaskStep)):
        raise LegacyStepTypeError(f"{loaded!r} is not a subclass of agent_env.task_step.TaskStep")
    if loaded.type == TaskStep.type:
        raise LegacyStepTypeError(f"{loaded.__qualname__} does not define its own 'type'")
    if loaded.type != name:
        raise LegacyStepTypeError(
            f"{loaded.__qualname__} has type {loaded.type!r}; its entry point must be named "
            f"{loaded.type!r}"
        )
    missing = sorted(getattr(loaded, "__abstractmethods__", ()))
    if inspect.getattr_static(loaded, "from_dict") is inspect.getattr_static(TaskStep, "from_dict"):
        missing.append("from_dict")
    if missing:
        raise LegacyStepTypeError(f"{loaded.__qualname__} must implement {', '.join(missing)}")
    return loaded


def _fields(legacy: type[TaskStep]) -> dict[str, Any]:
    """One attrs field per own `__init__` parameter of the legacy class (default kept)."""
    fields: dict[str, Any] = {}
    for param in inspect.signature(legacy.__init__).parameters.values():
        if param.name in _BASE_PARAMETERS or param.kind in (
            param.VAR_POSITIONAL,
            param.VAR_KEYWORD,
        ):
            continue
        if param.default is param.empty:
            fields[param.name] = attrs.field()
        elif isinstance(param.default, (list, dict, set)):
            fields[param.name] = attrs.field(
                factory=functools.partial(copy.deepcopy, param.default)
            )
        else:
            fields[param.name] = attrs.field(default=param.default)
    return fields


def adapt(name: str, loaded: Any) -> type[LegacyStep]:
    """Our step type for the legacy class `loaded`, registered as `name`."""
    legacy = _validate(name, loaded)
    cls: type[LegacyStep] = attrs.make_class(
        f"Legacy{legacy.__name__}",
        _fields(legacy),
        bases=(LegacyStep,),
        frozen=True,
        kw_only=True,
    )
    cls.type = name
    cls.legacy_class = legacy
    cls.__doc__ = f"{legacy.__module__}.{legacy.__qualname__}, a legacy step type (adapted)."
    return cls


class LegacyTaskSteps:
    """The adapter plugin of one distribution: registers its `agent_env.task_steps` entry
    points as step types (imported when the step-type registry is first built)."""

    def __init__(self, entries: list[Any]):
        self.entries = entries

    @hookimpl
    def agentenv_register_step_types(self, registry: Any) -> None:
        for entry in self.entries:
            try:
                loaded = entry.load()
            except Exception as exc:
                raise LegacyStepTypeError(
                    f"{entry.label}: {import_failure(entry.value, exc)}"
                ) from exc
            try:
                registry.add(adapt(entry.name, loaded))
            except LegacyStepTypeError as exc:
                raise LegacyStepTypeError(f"{entry.label}: {exc}") from None
