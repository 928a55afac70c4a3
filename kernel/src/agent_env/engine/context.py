"""The concrete `StepContext`: what one step execution sees; writes go to the instance's
shared state at once and are kept as ops for the step's journal entry."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from agent_env.context import ArtifactHandle, StepContext
from agent_env.engine.records import STEP_RECORD_FIELDS, STEP_RECORD_KEY
from agent_env.engine.state import StateError, apply_op, get_path
from agent_env.errors import StepFailed
from agent_env.resources import InstanceKey
from agent_env.suggest import did_you_mean

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.engine.instance import TaskInstance
    from agent_env.sandbox import Sandbox, SandboxProvider, SandboxSpec

T = TypeVar("T")


class EngineStepContext(StepContext):
    """One per step execution; `ops` is what this execution changed, in order."""

    def __init__(self, instance: TaskInstance, step_id: str):
        self._instance = instance
        self.step_id = step_id
        if instance.task_id is None:  # every record this engine writes names its task's id
            raise StepFailed(
                step_id, f"task instance {instance.id!r}: its record has no task id (task.id)"
            )
        self.task_id = instance.task_id
        self.task_instance_id = instance.id
        self.warm = instance.in_warm_pool
        #: The instance whose deploy steps made the sandboxes this one runs on (itself, or the
        #: warm pool's instance it adopted).
        self.origin_instance_id = instance.origin_id
        self.run_id = instance.run_id
        services = instance.services
        self.config = services.config
        self.plugins = services.plugins
        self.stores = services.stores
        self.agent_override = services.agent
        self.model_override = services.model
        manager = services.sandboxes
        self.default_provider = services.default_provider or (
            manager.default_provider() if manager is not None else "local"
        )
        self.ops: list[dict[str, Any]] = []

    @property
    def state(self) -> Mapping[str, Any]:
        return MappingProxyType(self._instance.state)

    def get(self, *path: str, default: Any = None) -> Any:
        return get_path(self._instance.state, path, default)

    def set(self, *path: str, value: Any) -> None:
        if not path or not all(isinstance(p, str) and p for p in path):
            raise StepFailed(self.step_id, f"state path must be non-empty strings, got {path!r}")
        self._apply({"op": "set", "path": list(path), "value": value})

    def delete(self, *path: str) -> None:
        """Remove `path` from the state (journaled like `set`)."""
        self._apply({"op": "del", "path": list(path)})

    def _apply(self, op: dict[str, Any]) -> None:
        try:
            apply_op(self._instance.state, op)
        except (StateError, TypeError, ValueError) as exc:
            raise StepFailed(self.step_id, f"cannot record state: {exc}") from None
        self.ops.append(op)

    def artifact(self, name: str) -> ArtifactHandle:
        artifacts = self._instance.services.artifacts
        if name not in artifacts:
            known = ", ".join(sorted(artifacts)) or "none"
            raise StepFailed(
                self.step_id,
                f"unknown artifact {name!r}{did_you_mean(name, artifacts)}; known: {known}",
            )
        return artifacts[name]

    async def create_sandbox(
        self, name: str, spec: SandboxSpec, *, provider: str | None = None
    ) -> Sandbox:
        return await self._instance.create_sandbox(self, name, spec, provider=provider)

    async def sandbox(self, name: str) -> Sandbox:
        return await self._instance.get_sandbox(self.step_id, name)

    async def teardown_sandbox(self, name: str) -> None:
        await self._instance.teardown_sandbox(self, name)

    async def instance_resource(
        self,
        key: InstanceKey[T],
        *,
        start: Callable[[], T | Awaitable[T]],
        close: Callable[[T], Any] | None = None,
    ) -> T:
        """The task instance's resource under `key`, started on first use; `close` runs when
        the instance ends, in the shielded teardown that also tears down its sandboxes."""
        return await self._instance.sandboxes.resources.get_or_start(key, start, close)

    def instance_resource_if_started(self, key: InstanceKey[T]) -> T | None:
        """The resource under `key` if some step started it, else None (never starts it)."""
        return self._instance.sandboxes.resources.get(key)

    def sandbox_provider(self, name: str | None = None) -> SandboxProvider:
        """The run's provider instance `name` (default: the run's default provider), for its
        optional capabilities (`can_build_images`/`build_image`, `host_address`)."""
        manager = self._instance.services.sandboxes
        if manager is None:
            from agent_env.errors import SandboxError

            raise SandboxError("this run has no sandbox manager")
        return manager.provider(name or self.default_provider)

    def record_verifier(
        self, verifier_id: str, results: list[dict[str, Any]], score: float | None
    ) -> None:
        from agent_env.engine.outcome import rows_problem, score_problem

        problem = rows_problem(results) or score_problem(score)
        if problem is not None:  # garbage decides nothing: the verifier's own error
            raise StepFailed(
                self.step_id,
                f"verifier {verifier_id!r} recorded garbage: {problem}",
                failure_class="verifier_error",
            )
        self.set("verifiers", verifier_id, value={"results": list(results), "score": score})

    def record_fields(self, **fields: str | None) -> None:
        unknown = sorted(set(fields) - set(STEP_RECORD_FIELDS))
        if unknown:
            raise ValueError(
                f"record_fields: unknown field(s) {', '.join(unknown)}; "
                f"known: {', '.join(STEP_RECORD_FIELDS)}"
            )
        for key, value in fields.items():
            if value is not None:
                self.set(STEP_RECORD_KEY, key, value=value)

    def add_secret(self, value: str) -> None:
        """Redact `value` from now on in everything this run persists or prints."""
        self._instance.services.redactor.add([value])

    def redact(self, value: Any) -> Any:
        return self._instance.services.redactor(value)

    def log(self, message: str) -> None:
        self._instance.log(self.step_id, message)
