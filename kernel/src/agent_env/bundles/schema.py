"""The models of a bundle's TOML files (`bundle.toml`, `evals/<name>.toml`, `aliases.toml`,
`artifacts/<name>/artifact.toml`),
structured by the kernel's one converter: unknown keys are errors with a did-you-mean, and
fields accepted only for compatibility are declared with `models.compat_ignored`."""

from __future__ import annotations

from typing import Any

import attrs

from agent_env.convert import Ignored, StructureProblems, structure


@attrs.frozen(kw_only=True)
class Requires:
    """`[requires]` in `bundle.toml`."""

    plugins: list[str] = attrs.field(factory=list)


@attrs.frozen(kw_only=True)
class BundleFile:
    """`bundle.toml`: the plugins the bundle needs (`plugins = [...]`, `[requires] plugins`
    or `requires = [...]`), optional name and description, and `reuse`."""

    name: str | None = None
    description: str | None = None
    plugins: list[str] = attrs.field(factory=list)
    requires: Requires | list[str] | None = None
    #: How a warm pool may reuse a deployed instance of the bundle's tasks between episodes:
    #: `reset` (the envs' data/reset) or `redeploy` (never reused); see docs/openenv.md.
    reuse: str | None = None

    def requirements(self) -> list[str]:
        """Every requirement, in order, once."""
        more = self.requires.plugins if isinstance(self.requires, Requires) else self.requires
        return list(dict.fromkeys([*self.plugins, *(more or [])]))


@attrs.frozen(kw_only=True)
class EvalFile:
    """`evals/<name>.toml`: the tasks an eval runs, by name or full id."""

    tasks: list[str]
    type: str | None = None
    id: str | None = None
    description: str | None = None


@attrs.frozen(kw_only=True)
class ArtifactFile:
    """`artifacts/<name>/artifact.toml`: the artifact's type when inference would pick another
    (the existing agent-env's names `file_artifact_universe` and `docker_image` included), an
    explicit id, and a description."""

    type: str | None = None
    id: str | None = None
    name: str | None = None
    description: str | None = None


@attrs.frozen(kw_only=True)
class AliasesFile:
    """`aliases.toml`: task and eval aliases (`alias = "task"`, top level or in `[aliases]`),
    and the existing product's `[envs]` / `[agents]` tables (`<folder name> = ["alias", ...]`)."""

    aliases: dict[str, str] = attrs.field(factory=dict)
    envs: dict[str, list[str]] = attrs.field(factory=dict)
    agents: dict[str, list[str]] = attrs.field(factory=dict)


def read_model(
    data: Any, cls: type, *, ignored: list[Ignored] | None = None
) -> tuple[Any, list[str]]:
    """(the model or None, one message per problem) for a parsed TOML (or YAML) file: strict,
    unknown keys with a did-you-mean (`unknown key 'prot' (did you mean 'port'?)`), each
    message led by its field path (`bundles.hello.plugins[0]: expected a string, got 3`)."""
    try:
        return structure(data, cls, ignored=ignored, noun="key"), []
    except StructureProblems as e:
        return None, list(e.problems)
