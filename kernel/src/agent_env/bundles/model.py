"""The parsed form of a bundle (DESIGN.md §3.4): values the parser builds and the engine reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import attrs

from agent_env.context import ArtifactHandle
from agent_env.errors import BundleError
from agent_env.models import Step
from agent_env.suggest import did_you_mean

ArtifactKind = Literal["file", "fileset", "image"]
FolderKind = Literal["env", "agent", "skill"]


@attrs.frozen(kw_only=True)
class ResolvedSource:
    """What a bundle spec resolved to: a local folder, where it came from, and optionally the
    id prefix and name its entities get (a plugin source such as hf:// sets both)."""

    path: Path
    provenance: dict[str, Any] = attrs.field(factory=dict)
    id_prefix: str | None = None
    name: str | None = None


@attrs.frozen(kw_only=True)
class Task:
    """A task: its steps structured into the registered step classes, and the JSON as written."""

    name: str
    id: str
    steps: list[Step]
    path: Path
    raw: list[Any] = attrs.field(factory=list, repr=False, eq=False)


@attrs.frozen(kw_only=True)
class EvalSpec:
    """An eval: the names of the bundle's tasks it runs (full ids of other tasks kept as is)."""

    name: str
    id: str
    tasks: list[str]
    path: Path
    config: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class ArtifactSpec:
    """An artifact folder: its inferred kind and its content files (relative POSIX paths)."""

    name: str
    id: str
    kind: ArtifactKind
    path: Path  # the artifact's folder
    files: dict[str, Path]  # relative path -> host file, sorted, artifact.toml excluded
    config: dict[str, Any] = attrs.field(factory=dict)

    @property
    def content_path(self) -> Path:
        """The file of a `file` artifact, else the folder."""
        if self.kind == "file":
            return next(iter(self.files.values()))
        return self.path


@attrs.frozen(kw_only=True)
class FolderSpec:
    """An env, agent or skill folder: its type, its toml config and its files."""

    kind: FolderKind
    name: str
    id: str
    type: str
    path: Path
    files: dict[str, Path]
    config: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class Bundle:
    """A parsed and validated bundle. Entity maps are keyed by bundle name."""

    root: Path
    name: str
    id_prefix: str
    description: str | None
    tasks: dict[str, Task]
    evals: dict[str, EvalSpec]
    envs: dict[str, FolderSpec]
    agents: dict[str, FolderSpec]
    artifacts: dict[str, ArtifactSpec]
    skills: dict[str, FolderSpec]
    aliases: dict[str, str]
    requires: list[str]
    provenance: dict[str, Any] = attrs.field(factory=dict)
    #: `bundle.toml`'s `reuse` (`reset` / `redeploy`), None when it does not say.
    reuse: str | None = None
    #: `aliases.toml` `[envs]` / `[agents]`: alias -> folder name (steps are already rewritten).
    env_aliases: dict[str, str] = attrs.field(factory=dict)
    agent_aliases: dict[str, str] = attrs.field(factory=dict)
    #: Problems that do not stop a run (compat-ignored fields), one line each; `load_bundle`
    #: reports them once on stderr.
    warnings: list[str] = attrs.field(factory=list)

    def entity_id(self, name: str) -> str:
        return f"{self.id_prefix}/{name}"

    def agent_name(self, name: str) -> str:
        """The agent folder name for `name` (an agent folder name or an `[agents]` alias)."""
        return self.agent_aliases.get(name, name)

    def resolve_name(self, name: str) -> str:
        """A task or eval name, with aliases followed."""
        return self.aliases.get(name, name)

    def task(self, name: str) -> Task:
        """The task `name` (or alias); `BundleError` with a did-you-mean when absent."""
        real = self.resolve_name(name)
        if real in self.tasks:
            return self.tasks[real]
        known = sorted(self.tasks) + sorted(self.aliases)
        raise BundleError(
            f"bundle {self.name!r} has no task {name!r}{did_you_mean(name, known)}; "
            f"tasks: {', '.join(sorted(self.tasks)) or 'none'}"
        )

    def eval(self, name: str) -> list[Task]:
        """The tasks of eval `name` (or alias), in the eval's order."""
        real = self.resolve_name(name)
        if real not in self.evals:
            known = sorted(self.evals) + sorted(self.aliases)
            raise BundleError(
                f"bundle {self.name!r} has no eval {name!r}{did_you_mean(name, known)}; "
                f"evals: {', '.join(sorted(self.evals)) or 'none'}"
            )
        return [self.tasks[t] for t in self.evals[real].tasks if t in self.tasks]


@attrs.frozen(kw_only=True)
class MaterializedArtifact(ArtifactHandle):
    """An artifact as stored: its id, version and digest, and its files on this host."""

    name: str
    kind: str
    id: str
    version: int
    digest: str
    path: Path


@attrs.frozen(kw_only=True)
class Materialized:
    """What `materialize` wrote (or, with dry_run, would write)."""

    lines: list[str]
    artifacts: dict[str, MaterializedArtifact]
    task_versions: dict[str, int]
    versions: dict[tuple[str, str], int] = attrs.field(factory=dict)  # (kind, name) -> version
    dry_run: bool = False
