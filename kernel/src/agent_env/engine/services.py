"""What the task instances of one run share: plugins, config, stores, the sandbox manager, the
redactor, the bundle's materialized artifacts, and the progress reporter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from agent_env.redact import Redactor

if TYPE_CHECKING:  # pragma: no cover
    from agent_env.engine.instance import TaskInstance


class Reporter:
    """Receives progress events (the CLI prints them on stderr). Methods must not block."""

    def step_started(self, instance: TaskInstance, step_id: str) -> None: ...

    def step_finished(
        self, instance: TaskInstance, step_id: str, status: str, seconds: float, error: str | None
    ) -> None: ...

    def log(self, instance: TaskInstance, step_id: str | None, message: str) -> None: ...

    def instance_finished(self, instance: TaskInstance, record: dict[str, Any]) -> None: ...


@attrs.define
class EngineServices:
    """Shared by every task instance of a run; `keep` defers every sandbox teardown; `agent` and
    `model` are the run's `--agent` / `--model` (steps read them as `ctx.agent_override` /
    `ctx.model_override`)."""

    plugins: Any
    config: Any
    stores: Any
    sandboxes: Any  # agent_env.sandboxes.manager.SandboxManager
    redactor: Redactor = attrs.field(factory=Redactor)
    artifacts: Mapping[str, Any] = attrs.field(factory=dict)
    reporter: Reporter = attrs.field(factory=Reporter)
    default_provider: str | None = None
    keep: bool = False
    agent: str | None = None
    model: str | None = None
