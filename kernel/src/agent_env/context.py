"""The interface a step sees while it runs. The engine provides the implementation.

State is a JSON tree shared by the steps of one task instance. Every write goes through
`set`, so the engine can journal what each step changed (secrets redacted), roll a span
back for a retry, and rebuild the state when a crashed run resumes. Well-known keys:

- `sandboxes.<name>`: what `create_sandbox` recorded (provider, id, reconnect info)
- `verifiers.<verifier_id>`: `{"results": [{id, result, description}], "score": float|None}`
- `outputs.<step_id>`: whatever a step wants later steps or the run record to see
- `envs.<name>`, `agents.<name>`: deployed environments and agents (later step types)
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Awaitable, Callable

    from agent_env.resources import InstanceKey
    from agent_env.sandbox import Sandbox, SandboxProvider, SandboxSpec


class ArtifactHandle(abc.ABC):
    """A materialized artifact of the bundle: its stored identity and its files on the host."""

    name: str
    kind: str  # "file" | "fileset" | "image"
    id: str  # e.g. "@local/<folder>/<name>"
    version: int
    digest: str
    path: Path  # the file (kind "file"), the folder (kinds "fileset" and "image")


class StepContext(abc.ABC):
    """What a running step may read and do. One instance per step execution."""

    step_id: str
    task_id: str
    task_instance_id: str
    run_id: str
    config: Any  # agent_env.config.Config
    plugins: Any  # agent_env.plugins.PluginManager (registries, hooks)
    stores: Any  # agent_env.stores.Stores (documents, objects, secrets, images)
    #: The provider `create_sandbox` uses when none is given (the run's `--sandbox`, else the
    #: config's `[sandbox] default`), for steps whose work differs per provider.
    default_provider: str = "local"
    #: The run's `--agent` / `--model` (None when not given): they replace every task's choice.
    agent_override: str | None = None
    model_override: str | None = None
    #: True in a warm pool's held instance: what its steps start (the run's gateway) serves
    #: every episode that adopts it, from the pool's event loop.
    warm: bool = False

    @property
    @abc.abstractmethod
    def state(self) -> Mapping[str, Any]:
        """A read-only view of the task instance's state."""

    @abc.abstractmethod
    def get(self, *path: str, default: Any = None) -> Any:
        """Read `state[path[0]][path[1]]...`, or `default` when any part is missing."""

    @abc.abstractmethod
    def set(self, *path: str, value: Any) -> None:
        """Write a JSON value at `path` (intermediate objects are created); journaled."""

    @abc.abstractmethod
    def artifact(self, name: str) -> ArtifactHandle:
        """The bundle's artifact `name`; `StepFailed` listing the known names if absent."""

    @abc.abstractmethod
    async def create_sandbox(
        self, name: str, spec: SandboxSpec, *, provider: str | None = None
    ) -> Sandbox:
        """Create a sandbox (provider from the argument, else the config's default) that the
        engine tears down with the run; recorded under `sandboxes.<name>`."""

    @abc.abstractmethod
    async def sandbox(self, name: str) -> Sandbox:
        """The live sandbox `name` (reconnected after a resume); `StepFailed` if unknown."""

    @abc.abstractmethod
    async def teardown_sandbox(self, name: str) -> None:
        """Tear a sandbox down now instead of at the end of the run."""

    @abc.abstractmethod
    def sandbox_provider(self, name: str | None = None) -> SandboxProvider:
        """The run's provider instance `name` (default: the run's default provider), for its
        optional capabilities (`can_build_images`/`build_image`, `host_address`)."""

    @abc.abstractmethod
    async def instance_resource(
        self,
        key: InstanceKey[Any],
        *,
        start: Callable[[], Any | Awaitable[Any]],
        close: Callable[[Any], Any | Awaitable[Any]] | None = None,
    ) -> Any:
        """The task instance's resource under `key`, started once by `start` (later callers
        get the same value) and closed by `close` in the instance's teardown."""

    @abc.abstractmethod
    def instance_resource_if_started(self, key: InstanceKey[Any]) -> Any:
        """The resource under `key` if some step started it, else None (never starts it)."""

    @abc.abstractmethod
    def record_verifier(
        self, verifier_id: str, results: list[dict[str, Any]], score: float | None
    ) -> None:
        """Write `verifiers.<verifier_id>` = `{"results": results, "score": score}`."""

    @abc.abstractmethod
    def log(self, message: str) -> None:
        """A progress line for this step (stderr in the CLI, the run record's log)."""

    def record_fields(self, **fields: str | None) -> None:
        """Report fields of the run record that only a step knows: `agent` and `model` (what
        the deployed agents were; the trial export and `runs show` read them). None is ignored;
        a field the run already set (its `--agent` / `--model`) is kept. The default does
        nothing; the engine's context implements it."""

    def add_secret(self, value: str) -> None:
        """Make the run's redaction replace `value` wherever it would be persisted (a token a
        step minted, say). The default does nothing; the engine's context implements it."""

    def redact(self, value: Any) -> Any:
        """`value` with the run's known secrets masked, for what a step persists itself (an
        object-store document, say). The default returns it unchanged."""
        return value
