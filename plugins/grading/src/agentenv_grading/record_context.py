"""`RecordContext`: the `StepContext` a verifier runs in when it re-scores a stored trial. Its
state is rebuilt from the trial record (`prompts` from the prompt steps' outputs, `outputs`,
`verifiers`, `step_rewards`); anything that needs a live env (sandboxes, artifacts, instance
resources) fails with `NeedsLiveEnv`, naming the step.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from agent_env.context import ArtifactHandle, StepContext
from agent_env.errors import StepFailed


class NeedsLiveEnv(StepFailed):
    """A verifier asked for something only a deployed task instance has."""


def state_from_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a finished instance's state its record keeps, in the shape verifier steps
    read: `prompts.<prompt_id>` (what `prompt_agent` recorded), `outputs`, `agents` (names
    only), `verifiers` and `step_rewards`."""
    outputs = dict(record.get("outputs") or {})
    prompts: dict[str, Any] = {}
    for value in outputs.values():
        if isinstance(value, Mapping) and isinstance(value.get("prompt_id"), str):
            prompt = dict(value)
            prompts[prompt.pop("prompt_id")] = prompt
    agents: dict[str, dict[str, Any]] = {
        str(p["agent_name"]): {} for p in prompts.values() if isinstance(p.get("agent_name"), str)
    }
    return {
        "outputs": outputs,
        "prompts": prompts,
        "agents": agents,
        "verifiers": dict(record.get("verifiers") or {}),
        "step_rewards": list(record.get("step_rewards") or []),
    }


class RecordContext(StepContext):
    """One verifier execution over a stored trial's state (shared by the trial's verifiers)."""

    def __init__(
        self,
        state: dict[str, Any],
        record: Mapping[str, Any],
        step_id: str,
        *,
        plugins: Any,
        config: Any = None,
        stores: Any = None,
    ) -> None:
        self._state = state
        self.step_id = step_id
        task = record.get("task") or {}
        self.task_id = str(task.get("id") or task.get("name") or "")
        self.task_name = str(task.get("name") or "")
        self.task_instance_id = str(record.get("id") or "")
        self.run_id = str(record.get("run_id") or "")
        self.plugins = plugins
        self.config = config
        self.stores = stores
        self.lines: list[str] = []

    @property
    def state(self) -> Mapping[str, Any]:
        return MappingProxyType(self._state)

    def get(self, *path: str, default: Any = None) -> Any:
        node: Any = self._state
        for part in path:
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def set(self, *path: str, value: Any) -> None:
        if not path or not all(isinstance(p, str) and p for p in path):
            raise StepFailed(self.step_id, f"state path must be non-empty strings, got {path!r}")
        node = self._state
        for part in path[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[path[-1]] = value

    def _live(self, what: str) -> NeedsLiveEnv:
        return NeedsLiveEnv(
            self.step_id,
            f"needs {what}, which only a deployed task has; a regrade reads the record alone "
            "(its verifier results are kept when the record has them)",
        )

    def artifact(self, name: str) -> ArtifactHandle:
        raise self._live(f"the artifact {name!r}")

    async def create_sandbox(self, name: str, spec: Any, *, provider: str | None = None) -> Any:
        raise self._live(f"a new sandbox {name!r}")

    async def sandbox(self, name: str) -> Any:
        raise self._live(f"the sandbox {name!r}")

    async def teardown_sandbox(self, name: str) -> None:
        raise self._live(f"the sandbox {name!r}")

    def sandbox_provider(self, name: str | None = None) -> Any:
        raise self._live("a sandbox provider")

    async def instance_resource(self, key: Any, *, start: Any, close: Any = None) -> Any:
        raise self._live(f"the instance resource {getattr(key, 'name', key)!r}")

    def instance_resource_if_started(self, key: Any) -> Any:
        return None

    def record_verifier(
        self, verifier_id: str, results: list[dict[str, Any]], score: float | None
    ) -> None:
        self.set("verifiers", verifier_id, value={"results": results, "score": score})

    def log(self, message: str) -> None:
        self.lines.append(f"{self.step_id}: {message}")
