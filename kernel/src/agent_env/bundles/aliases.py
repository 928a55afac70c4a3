"""`aliases.toml`: other names for a bundle's tasks, evals, envs and agents.

Task and eval aliases are `alias = "task-or-eval"` (top level, or in an `[aliases]` table).
The existing product's `[envs]` and `[agents]` tables map a folder name to the aliases a task
may name it by (`mail = ["mail", "mailbox"]`); a step field that names an env or agent by an
alias is rewritten to the folder name when the bundle is parsed, so everything after parsing
(checks, materialization, the steps) sees the real name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from agent_env.bundles.check import step_refs
from agent_env.bundles.schema import AliasesFile, read_model
from agent_env.suggest import did_you_mean

#: The tables that alias bundle entities, and the entity kind each names.
ENTITY_TABLES = {"envs": "env", "agents": "agent"}
TASK_TABLE = "aliases"
#: An entity alias is a plain name, never an id (the existing product's rule).
ALIAS_NAME = r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?"
ALIAS_RULE = "lowercase letters, digits and '-', at most 64 characters"


def read_aliases(data: dict[str, Any]) -> tuple[AliasesFile | None, list[str]]:
    """The parsed `aliases.toml` and one message per problem of its shape."""
    data = dict(data)
    tables = {k: data.pop(k) for k in (*ENTITY_TABLES, TASK_TABLE) if isinstance(data.get(k), dict)}
    problems = []
    for key, value in list(data.items()):
        if isinstance(value, dict):
            known = [*ENTITY_TABLES, TASK_TABLE]
            problems.append(
                f"[{key}]: not a table aliases.toml takes{did_you_mean(key, known)}; "
                f'it takes [envs], [agents] and task aliases (alias = "task")'
            )
            data.pop(key)
        elif not isinstance(value, str):
            problems.append(f"{key}: expected the name of a task or eval, got {value!r}")
            data.pop(key)
    tables[TASK_TABLE] = {**data, **tables.get(TASK_TABLE, {})}
    model, shape = read_model(tables, AliasesFile)
    return model, problems + shape


def entity_aliases(
    model: AliasesFile, kinds: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, dict[str, str]], list[str]]:
    """(kind -> alias -> folder name, problems): each alias names a folder the bundle has,
    follows the alias rule, is given once, and is not another folder's name."""
    out: dict[str, dict[str, str]] = {}
    problems: list[str] = []
    for table, kind in ENTITY_TABLES.items():
        own = kinds.get(kind, {})
        named: dict[str, str] = {}
        for name, aliases in getattr(model, table).items():
            if name not in own:
                problems.append(
                    f"{table}.{name}: the bundle has no {kind} {name!r}"
                    f"{did_you_mean(name, own)}; {table}: {', '.join(sorted(own)) or 'none'}"
                )
                continue
            if not aliases:
                problems.append(f"{table}.{name}: expected a non-empty list of aliases")
            for alias in aliases:
                if not re.fullmatch(ALIAS_NAME, alias):
                    problems.append(f"{table}.{name}: {alias!r} is not an alias: {ALIAS_RULE}")
                elif alias in named:
                    other = named[alias]
                    twice = "twice" if other == name else f"for {table}.{other} too"
                    problems.append(f"{table}.{name}: {alias!r} is listed {twice}")
                elif alias in own and alias != name:
                    problems.append(f"{table}.{name}: {alias!r} is the name of {kind} {alias!r}")
                else:
                    named[alias] = name
        out[kind] = {a: n for a, n in named.items() if a != n}
    return out, problems


def apply_aliases(step: Any, aliases: Mapping[str, Mapping[str, str]]) -> Any:
    """`step` with each env/agent field that names an alias rewritten to the folder name
    (fields given as `name` or `name[]` in the step's `bundle_refs`)."""
    changes: dict[str, Any] = {}
    for kind, paths in step_refs(step).items():
        table = aliases.get(kind) or {}
        if not table:
            continue
        for path in paths:
            field = path.removesuffix("[]")
            if "." in field or "[" in field or not attrs.has(type(step)):
                continue
            value = changes.get(field, getattr(step, field, None))
            if path.endswith("[]") and isinstance(value, list):
                changes[field] = [table.get(v, v) if isinstance(v, str) else v for v in value]
            elif isinstance(value, str) and value in table:
                changes[field] = table[value]
    return attrs.evolve(step, **changes) if changes else step
