"""The hook specifications: the whole contract between the kernel and plugins.

Names are a contract: add hooks, never rename them. A plugin is a module (usually its
`hooks.py`, loaded from the `agent_env` entry-point group) with `@hookimpl` functions::

    from agent_env import hookimpl

    @hookimpl
    def agentenv_register_step_types(registry):
        from my_plugin.steps import MyStep   # keep hooks.py cheap; import here
        registry.add(MyStep)

Registering by import path keeps start-up fast: the class is imported only when a run uses it
(its name-keyed class attributes, such as a store's `kind`, are declared in the call and
checked against the class when it is imported)::

    @hookimpl
    def agentenv_register_step_types(registry):
        registry.add_lazy("shout", "my_plugin.steps:Shout")

Hooks are cheap and synchronous; I/O lives in the async methods of the registered classes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

PROJECT = "agent_env"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping, Sequence
    from contextlib import AbstractAsyncContextManager
    from pathlib import Path

    from agent_env.agents import AgentKind
    from agent_env.bundles.model import ResolvedSource
    from agent_env.caches import CacheKind
    from agent_env.cli.lazy import LazyGroup
    from agent_env.context import StepContext
    from agent_env.engine.records import TaskInstanceRecord
    from agent_env.engine.runner import Runner
    from agent_env.entities.kinds import EntityKindRegistry
    from agent_env.entrypoints import InstalledEntryPoint
    from agent_env.envs import EnvType
    from agent_env.exports import ExportFormat
    from agent_env.models import Step
    from agent_env.plugins.registries import StoreRegistry
    from agent_env.registry import Registry
    from agent_env.sandbox import SandboxProvider


@hookspec
def agentenv_register_step_types(registry: Registry[type[Step]]) -> None:
    """Called once when the step-type registry is built; call `registry.add(StepClass)`.

    A step class subclasses `agent_env.models.Step` (an attrs class) and sets `type`::

        @hookimpl
        def agentenv_register_step_types(registry):
            from my_plugin.steps import Shout
            registry.add(Shout)      # Shout.type == "shout"
    """


@hookspec
def agentenv_register_env_types(registry: Registry[type[EnvType]]) -> None:
    """Called once when the env-type registry is built; call `registry.add(EnvTypeClass)`.

    Example: `registry.add(McpServerEnv)` where `McpServerEnv.type == "mcp_server"`.
    """


@hookspec
def agentenv_register_sandbox_providers(registry: Registry[type[SandboxProvider]]) -> None:
    """Called once when the sandbox-provider registry is built; add `SandboxProvider` classes.

    Example: `registry.add(DockerProvider)` where `DockerProvider.type == "docker"`; lazily,
    with the flags `provider_chain` reads unimported: `registry.add_lazy("docker",
    "my_plugin.provider:DockerProvider", can_build_images=True, on_this_machine=True)`.
    """


@hookspec
def agentenv_register_stores(registry: StoreRegistry) -> None:
    """Called once when the store registries are built; add store backend classes.

    Each class has `kind` ("document", "object", "image" or "secret") and `type` (the name
    used in `[stores] document = "<type>"`)::

        @hookimpl
        def agentenv_register_stores(registry):
            from my_plugin.store import RedisDocuments
            registry.add(RedisDocuments)   # kind "document", type "redis"

    or, without importing the class until a config selects it::

            registry.add_lazy("redis", "my_plugin.store:RedisDocuments", kind="document")
    """


@hookspec
def agentenv_register_runners(registry: Registry[type[Runner]]) -> None:
    """Called once when the runner registry is built; add runner classes keyed by `type`.

    Example: `registry.add(RayRunner)` where `RayRunner.type == "ray"`.
    """


@hookspec
def agentenv_register_agents(registry: Registry[type[AgentKind]]) -> None:
    """Called once when the agent registry is built; add built-in agent kinds by `type`.

    Example: `registry.add(ScriptedAgent)` where `ScriptedAgent.type == "scripted"`.
    """


@hookspec
def agentenv_register_entity_kinds(registry: EntityKindRegistry) -> None:
    """Called once when the entity-kind registry is built; add `EntityKind` declarations.

    Each kind gets `agent-env entity <kind> list|show|get|put|validate`, with no kernel change::

        @hookimpl
        def agentenv_register_entity_kinds(registry):
            from agent_env.entities.kinds import EntityKind
            registry.add(EntityKind(kind="scenario", help="Scenarios.", required=("goal",)))
    """


@hookspec
def agentenv_register_commands(group: LazyGroup) -> None:
    """Called when the CLI is built; contribute commands to the root group.

    Prefer lazy registration so `agent-env --help` stays fast::

        @hookimpl
        def agentenv_register_commands(group):
            group.add_lazy_command("shout", "my_plugin.cli:shout", "Shout a greeting.")

    `group.add_command(click_command)` also works for already-imported commands.
    """


@hookspec(firstresult=True)
def agentenv_resolve_bundle_source(spec: str) -> ResolvedSource | None:
    """Resolve a bundle spec that is neither a folder nor an installed bundle name.

    Return an `agent_env.bundles.ResolvedSource` (a local folder plus provenance) for a spec
    this plugin understands, `None` otherwise. The first non-None answer wins::

        @hookimpl
        def agentenv_resolve_bundle_source(spec):
            if not spec.startswith("hf://"):
                return None
            from agentenv_hf_hub.source import resolve
            return resolve(spec)
    """


@hookspec(firstresult=True)
def agentenv_push_bundle(
    folder: Path, destination: str, message: str | None
) -> dict[str, Any] | None:
    """Publish the validated bundle `folder` (a `Path`) to `destination` (`agent-env bundle
    push`), which this plugin understands, with the commit `message` if given.

    Return a dict saying where it went (`destination`, and e.g. `revision`, `url`, `files`) for
    a destination this plugin handles, `None` otherwise; raise `BundleError` naming what failed.
    The first non-None answer wins::

        @hookimpl
        def agentenv_push_bundle(folder, destination, message):
            if not destination.startswith("hf://"):
                return None
            from agentenv_hf_hub.push import push
            return push(folder, destination, message=message)
    """


@hookspec
def agentenv_register_export_formats(registry: Registry[type[ExportFormat]]) -> None:
    """Called once when the export-format registry is built (by `agent-env runs export
    --format NAME`); add `agent_env.exports.ExportFormat` classes, keyed by their `type`::

        @hookimpl
        def agentenv_register_export_formats(registry):
            registry.add_lazy("csv", "my_plugin.export:Csv", suffix=".csv", binary=False)
    """


@hookspec(firstresult=True)
def agentenv_push_dataset(
    folder: Path, destination: str, message: str | None
) -> dict[str, Any] | None:
    """Publish the dataset folder `folder` (a `Path`: a README.md card and `data/` files that
    `agent-env runs export --to DESTINATION` wrote) to `destination`, which this plugin
    understands, with the commit `message` if given.

    Return a dict saying where it went (`destination`, and e.g. `revision`, `url`, `files`) for
    a destination this plugin handles, `None` otherwise; raise `AgentEnvError` naming what
    failed. The first non-None answer wins::

        @hookimpl
        def agentenv_push_dataset(folder, destination, message):
            if not destination.startswith("hf://"):
                return None
            from agentenv_hf_hub.dataset import push_dataset
            return push_dataset(folder, destination, message=message)
    """


@hookspec
def agentenv_step_wrapper(
    step: Step, ctx: StepContext
) -> AbstractAsyncContextManager[object] | None:
    """Called before each step runs; return an async context manager to wrap it, or None.

    The engine enters every returned manager around `step.execute(ctx)` (tracing, timing)::

        @hookimpl
        def agentenv_step_wrapper(step, ctx):
            return timed(step.id)      # an @contextlib.asynccontextmanager
    """


@hookspec
def agentenv_run_finished(record: TaskInstanceRecord) -> None:
    """Called after a task instance finishes (passed, failed or cancelled) with its record, as
    stored (redacted): a `TaskInstanceRecord` (`record.id`, `record.run_id`, `record.status`,
    `record.scores`, `record.to_dict()`; `record["id"]` also reads the stored document, for
    hooks written when this hook got a dict). Must not raise; errors are reported::

        @hookimpl
        def agentenv_run_finished(record):
            tracker.log(record.id, status=str(record.status), scores=record.scores)
    """


@hookspec
def agentenv_register_cache_kinds(registry: Registry[type[CacheKind]]) -> None:
    """Called once when the cache-kind registry is built (by `agent-env cache list|prune`);
    add `agent_env.caches.CacheKind` classes, keyed by their `type`.

    A folder under the cache dir needs only a `FolderCache` subclass::

        # my_plugin/caches.py
        class DownloadCache(FolderCache):
            type = "downloads"
            description = "Files my plugin downloaded"
            folders = ("my-plugin",)

        @hookimpl
        def agentenv_register_cache_kinds(registry):
            from my_plugin.caches import DownloadCache
            registry.add(DownloadCache)
    """


@hookspec
def agentenv_register_subcommands(parent: str, group: LazyGroup) -> None:
    """Called when the kernel's command group `parent` is first used (`plugin`, for
    `agent-env plugin ...`, or `runs`); add subcommands to it as `agentenv_register_commands` adds
    commands to the root group. A name the group already has is an error naming both::

        @hookimpl
        def agentenv_register_subcommands(parent, group):
            if parent == "plugin":
                group.add_lazy_command("publish", "my_plugin.cli:publish", "Publish a plugin.")
    """


@hookspec
def agentenv_discover_plugins(
    entry_points: list[InstalledEntryPoint],
) -> list[tuple[Any, list[object]]] | None:
    """Called once while plugins load, after the `agent_env` group's entry points; bring in
    plugins declared some other way (agentenv-legacy: the existing product's entry-point groups).

    `entry_points` are the installed `agent_env.entrypoints.InstalledEntryPoint`s of every
    `agent_env` and `agent_env.*` group (`group`, `name`, `value`, `dist`, `version`, `load()`).
    Return `(PluginInfo, [plugin objects])` pairs, or None: each object is registered under the
    row's name like an entry point's module (disabling, isolation and `plugin list` apply); a
    row without objects is listed as unsupported, its `errors` saying why::

        @hookimpl
        def agentenv_discover_plugins(entry_points):
            from agent_env.plugins import PluginInfo
            mine = [ep for ep in entry_points if ep.group == "agent_env.widgets"]
            return [
                (PluginInfo(name=ep.dist, module=ep.value, dist=ep.dist), [Widgets(ep)])
                for ep in mine
            ]
    """


@hookspec
def agentenv_score_call(
    call: Mapping[str, Any], index: int, task: str
) -> Mapping[str, float] | None:
    """Score one gateway call of a finished prompt (a per-step reward). Called by verifier
    steps that score calls (agentenv-grading's `call_reward_verifier`) for each recorded call
    of the agent, in order: `call` is the call as recorded (`tool`, `arguments`, `error`,
    `duration_ms`, and `result` when the verifier reads the trajectory), `index` its position
    among the trial's calls, `task` the task's id.

    Return `{verifier_name: score}` (score in [0, 1]) to reward the call, None to pass. Each
    pair becomes a `step_rewards` entry `{call_index, score, verifier}` of the trial record::

        @hookimpl
        def agentenv_score_call(call, index, task):
            if call.get("error"):
                return {"no-errors": 0.0}
            return None
    """


@hookspec(firstresult=True)
def agentenv_sample_task(
    sampler: str, tasks: Sequence[str], task_version: Mapping[str, int | None]
) -> int | None:
    """Pick the next task of an OpenEnv split whose sampler is `sampler` (the split's
    `--sampler` value, e.g. `band:0.2-0.8`): return the index into `tasks` (task ids), or None
    when this plugin does not know `sampler`. `task_version` maps a task id to the version the
    split serves. The first non-None answer wins::

        @hookimpl
        def agentenv_sample_task(sampler, tasks, task_version):
            if sampler != "first":
                return None
            return 0
    """
