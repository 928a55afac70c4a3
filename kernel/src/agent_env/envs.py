"""The env type interface: what a kind of env folder implements so `deploy_env` can run it.

Public API: a third-party env type subclasses `EnvType` and registers it through
`agentenv_register_env_types`. The deploy step parses the bundle's env folder with
`from_folder`, calls `deploy` in a sandbox of the chosen provider, fronts the returned `url`
with the run's gateway and records the rest under `envs.<name>` (so it must hold no secret)::

    @attrs.frozen(kw_only=True)
    class EchoEnv(EnvType):
        type: ClassVar[str] = "echo"
        name: str
        folder: Path

        @classmethod
        def from_folder(cls, name, folder, config):
            return cls(name=name, folder=folder)

        async def deploy(self, ctx, *, sandbox_name, provider, **limits):
            sandbox = await ctx.sandbox(sandbox_name, provider=provider)  # your provider calls
            ...
            return {"url": url, "card": card}
"""

from __future__ import annotations

import abc
import builtins
from pathlib import Path
from typing import Any, ClassVar, NotRequired, Self, TypedDict

#: The file of an env folder that configures it.
ENV_TOML = "env.toml"


class EnvDeployment(TypedDict):
    """What `EnvType.deploy` returns: the env's MCP URL (host view) and its card, plus
    optional facts the deploy step records (`image`, `phases` timings, `warm`, `python`)."""

    url: str
    card: dict[str, Any]
    image: NotRequired[str]
    phases: NotRequired[dict[str, float]]
    warm: NotRequired[bool]
    python: NotRequired[str]


class EnvType(abc.ABC):
    """A kind of env folder (`env.toml` `type`), parsed into one instance per deployment."""

    type: ClassVar[str] = ""
    #: The bundle folder kind ("env") this type is the default for, when a folder's `env.toml`
    #: names no `type`; at most one installed env type should claim it.
    default_for: ClassVar[str | None] = None
    #: An attrs class the bundle parser structures the folder's `env.toml` into (strict: unknown
    #: keys are errors with a did-you-mean; fields declared with `models.compat_ignored` are
    #: accepted and warned about once); None leaves the file to this type's own checks.
    config_model: ClassVar[builtins.type | None] = None

    @staticmethod
    def problems(config: dict[str, Any], files: list[str]) -> list[str]:
        """Static checks of an env folder (its `env.toml` config and file names) that
        `config_model` cannot express (e.g. a file it names exists), one message each, naming
        the file (`env.toml: port: ...`); the bundle parser runs them, after `config_model`,
        for every env folder of this type, so they must not assume `config` fits the model. `from_folder` should raise on the same
        problems (see `read_config`). None by default."""
        return []

    @classmethod
    def read_config(cls, config: dict[str, Any], files: list[str]) -> Any:
        """`config` structured into `config_model` (strictly, as the bundle parser does; the
        dict itself when there is none), then checked by `problems`; `ValueError` listing
        every problem (the model's prefixed `env.toml:`)."""
        from agent_env.convert import StructureProblems, structure

        value: Any = config
        found: list[str] = []
        if cls.config_model is not None:
            try:
                value = structure(config, cls.config_model, noun="key")
            except StructureProblems as e:
                found.extend(f"{ENV_TOML}: {p}" for p in e.problems)
        found.extend(cls.problems(config, files))
        if found:
            raise ValueError("; ".join(found))
        return value

    @classmethod
    @abc.abstractmethod
    def from_folder(cls, name: str, folder: Path, config: dict[str, Any]) -> Self:
        """Parse the materialized env folder; `ValueError` listing every problem."""

    @classmethod
    def served_tools(cls, config: dict[str, Any], folder: Path) -> frozenset[str] | None:
        """The names of the tools an env folder of this type serves, when they are known
        without deploying it (`agent-env check` warns about a criterion naming another tool);
        None when they are not known. None by default."""
        return None

    def unavailable_on(self, ctx: Any, provider: str) -> str | None:
        """Why `provider` cannot host this env, or None when it can: `deploy_env` deploys on
        the first provider of its chain (`--sandbox local,docker`) that can. None by default."""
        return None

    @abc.abstractmethod
    async def deploy(
        self, ctx: Any, *, sandbox_name: str, provider: str, **limits: Any
    ) -> EnvDeployment:
        """Bring the env up in a sandbox named `sandbox_name` of `provider` (`limits` such as
        `cpus`/`memory` enforced or refused); the sandbox belongs to the run, whose teardown
        stops the env."""
