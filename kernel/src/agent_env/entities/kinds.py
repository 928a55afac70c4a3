"""Entity kinds a plugin declares: stored, versioned things the registry commands manage.

A plugin declares a kind with the `agentenv_register_entity_kinds` hook and gets
`agent-env entity <kind> list|show|get|put|validate` with no kernel change::

    from agent_env.entities.kinds import EntityKind

    @hookimpl
    def agentenv_register_entity_kinds(registry):
        registry.add(EntityKind(kind="scenario", help="Acme scenarios.", required=("goal",)))

An entity of the kind is a JSON or TOML file (`scenarios/<name>.toml`; its table is the
content) or a folder (`scenarios/<name>/`: `scenario.toml` is the content, every other file is
stored by digest). `put` writes a new version only when the digest changed; `validate` and
`put` apply `required`, `types` and the kind's own `check` first, and write nothing on a problem.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from agent_env.errors import PluginError
from agent_env.registry import Registry

__all__ = ["BUILTIN_KINDS", "EntityKind", "EntityKindRegistry"]

#: The kinds the kernel's own commands manage (`agent-env task ...`); a plugin may not take them.
BUILTIN_KINDS = ("task", "eval", "env", "agent", "artifact", "skill")
_KIND = re.compile(r"[a-z][a-z0-9_]{0,39}")


def _kind_name(_: Any, __: Any, value: str) -> None:
    if not isinstance(value, str) or not _KIND.fullmatch(value):
        raise ValueError(
            f"entity kind {value!r}: use lowercase letters, digits and '_', starting with a letter"
        )


def _names(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


@attrs.frozen(kw_only=True)
class EntityKind:
    """The declaration of one entity kind.

    `kind` names it (and its store collection); `help` is its one-line description;
    `folder` is the bundle folder its entities live in (default `<kind>s`); `required` lists
    the content keys every entity must have; `types`, when given, the values `type` may take;
    `check(content)` returns more problems (strings), each reported with the file it came from.
    """

    kind: str = attrs.field(validator=_kind_name)
    help: str = ""
    folder: str = ""
    required: tuple[str, ...] = attrs.field(default=(), converter=_names)
    types: tuple[str, ...] = attrs.field(default=(), converter=_names)
    check: Callable[[dict[str, Any]], Iterable[str]] | None = None

    @property
    def folder_name(self) -> str:
        """The bundle folder this kind's entities live in."""
        return self.folder or f"{self.kind}s"

    @property
    def settings_file(self) -> str:
        """The file of a folder entity that holds its content (`<kind>.toml`)."""
        return f"{self.kind}.toml"

    def problems(self, content: dict[str, Any]) -> list[str]:
        """What is wrong with `content` for this kind (empty when it is valid)."""
        from agent_env.suggest import did_you_mean

        found = [f"{key}: required" for key in self.required if key not in content]
        type_ = content.get("type")
        if self.types and type_ is not None and type_ not in self.types:
            found.append(
                f"type: unknown {self.kind} type {type_!r}{did_you_mean(str(type_), self.types)}; "
                f"known: {', '.join(self.types)}"
            )
        if self.check is not None:
            try:
                found.extend(str(p) for p in self.check(content) or ())
            except Exception as exc:  # a plugin's check must not crash the command
                found.append(f"the {self.kind} check raised {type(exc).__name__}: {exc}")
        return found


class EntityKindRegistry(Registry[EntityKind]):
    """Declared kinds keyed by `kind`; the kernel's own kinds cannot be declared again."""

    def __init__(self) -> None:
        super().__init__("entity kind", key="kind")

    def add(self, cls: Any) -> Any:
        if not isinstance(cls, EntityKind):
            raise PluginError(
                f"plugin {self._current_plugin!r} registered {cls!r} as an entity kind; "
                "register an agent_env.entities.kinds.EntityKind(kind=..., ...)"
            )
        if cls.kind in (*BUILTIN_KINDS, "kinds"):
            raise PluginError(
                f"plugin {self._current_plugin!r} declared entity kind {cls.kind!r}, which the "
                f"kernel owns; the kernel's kinds: {', '.join(BUILTIN_KINDS)} (and 'kinds' is "
                "the command that lists them)"
            )
        return super().add(cls)
