"""Per-trial seed tables and `{placeholder}` substitution in step fields.

A seed table is `seeds.toml` at the bundle root or the file given with `agent-env run --seeds`:
`[[trial]]` tables (trial i uses entry i, cycling when there are fewer entries than trials) or
a short `seeds = [17, 42]` list (each value becomes `{seed}`). Every string field of a step
(except `id` and `depends_on`) has `{name}` replaced by the trial's value of `name`; `{trial}`
(the 0-based trial index) and `{seed}` (the trial index unless the table gives one) always
exist; `{{name}}` stays a literal `{name}`; any other brace text is left alone.

A value that is exactly one placeholder (`"{amount}"`) takes the seed's own TOML type where the
field accepts more than text (an `Any` value, such as a criterion's `arguments`), so `15000`
stays the integer 15000; inside a longer string, or in a field declared as text, it is
formatted into the string.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from agent_env.convert import StructureProblems, structure
from agent_env.errors import BundleError

FILE_NAME = "seeds.toml"
_SCALARS = (str, int, float, bool)
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_PLACEHOLDER = r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}"
_WHOLE = r"\{([A-Za-z_][A-Za-z0-9_]*)\}"
_SKIP_FIELDS = frozenset({"id", "depends_on", "retry_config", "fail_task_on_error"})


@attrs.frozen(kw_only=True)
class SeedsFile:
    """The shape of a seed table file; the values are checked below, with friendlier words."""

    trial: list[dict[str, Any]] | None = None
    seeds: list[Any] | None = None


@attrs.frozen(kw_only=True)
class SeedTable:
    """The entries of a seed table (each a name -> scalar mapping) and the file they came from."""

    entries: tuple[Mapping[str, Any], ...] = ()
    source: str | None = None

    def values(self, trial: int) -> dict[str, Any]:
        """The placeholder values of trial `trial` (0-based)."""
        entry = dict(self.entries[trial % len(self.entries)]) if self.entries else {}
        return {"trial": trial, "seed": entry.pop("seed", trial), **entry}


def load_seed_table(path: Path | None, bundle_root: Path | None = None) -> SeedTable:
    """`path` if given, else `<bundle_root>/seeds.toml` if it exists, else an empty table.

    `BundleError` naming the file and entry for anything but scalar values under valid names."""
    if path is None:
        if bundle_root is None or not (Path(bundle_root) / FILE_NAME).is_file():
            return SeedTable()
        path = Path(bundle_root) / FILE_NAME
    path = Path(path)
    import tomllib  # only a seed table pays for its regexes

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(f"seed table {path}: no such file") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BundleError(f"seed table {path}: {exc}") from None
    problems: list[str] = []
    try:
        structure(data, SeedsFile, noun="key")
    except StructureProblems as exc:
        problems.extend(p for p in exc.problems if not p.startswith(("seeds", "trial")))
    if "trial" in data and "seeds" in data:
        problems.append("give either [[trial]] tables or seeds = [...], not both")
    entries: list[dict[str, Any]] = []
    if "seeds" in data:
        raw = data["seeds"]
        if not isinstance(raw, list) or not raw:
            problems.append("seeds must be a non-empty list of numbers or strings")
        else:
            for i, value in enumerate(raw):
                if not isinstance(value, _SCALARS):
                    problems.append(f"seeds[{i}]: must be a number or a string, got {value!r}")
                entries.append({"seed": value})
    if "trial" in data:
        raw = data["trial"]
        if not isinstance(raw, list) or not raw or not all(isinstance(t, dict) for t in raw):
            problems.append("[[trial]] must be one or more tables")
        else:
            for i, table in enumerate(raw):
                for key, value in table.items():
                    if not re.fullmatch(_NAME, key):
                        problems.append(f"trial {i + 1}: {key!r} is not a placeholder name")
                    elif key == "trial":
                        problems.append(f"trial {i + 1}: 'trial' is set by the engine")
                    elif not isinstance(value, _SCALARS):
                        problems.append(f"trial {i + 1}: {key} must be a number, string or boolean")
                entries.append(dict(table))
    if problems:
        raise BundleError(f"seed table {path} is invalid", problems)
    return SeedTable(entries=tuple(entries), source=str(path))


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def substitute_text(text: str, values: Mapping[str, Any]) -> str:
    """`text` with `{name}` replaced for the names in `values` (see the module docstring)."""
    if "{" not in text:
        return text

    def one(match: re.Match) -> str:
        escaped, name = match.group(1), match.group(2)
        if escaped is not None:
            return "{" + escaped + "}" if escaped in values else match.group(0)
        return _text(values[name]) if name in values else match.group(0)

    return re.sub(_PLACEHOLDER, one, text)


def _admits_non_text(typ: Any) -> bool:
    """Whether a field declared `typ` may hold a seed's own value rather than its text."""
    if typ is Any or typ is object:
        return True
    if typ in (int, float, bool):
        return True
    origin = typing.get_origin(typ)
    if origin in (typing.Union, types.UnionType):
        return any(_admits_non_text(arg) for arg in typing.get_args(typ) if arg is not type(None))
    return False


def _item_type(typ: Any, container: type) -> Any:
    """The declared type of the items (values, for a mapping) of `typ`; `str` when unknown, so
    anything undeclared keeps the old text substitution."""
    if typ is Any or typ is object:
        return Any
    origin = typing.get_origin(typ)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(typ):
            base = typing.get_origin(arg) or arg
            if isinstance(base, type) and issubclass(base, container):
                return _item_type(arg, container)
        return str
    args = typing.get_args(typ)
    if container is dict:
        return args[1] if len(args) == 2 else str
    if container is tuple and len(args) == 2 and args[1] is Ellipsis:
        return args[0]
    return args[0] if len(args) == 1 else str


_HINTS: dict[type, dict[str, Any]] = {}


def _field_types(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        try:
            _HINTS[cls] = typing.get_type_hints(cls)
        except Exception:  # an annotation that cannot be resolved: treat every field as text
            _HINTS[cls] = {}
    return _HINTS[cls]


def _substitute(value: Any, values: Mapping[str, Any], typ: Any = str) -> Any:
    if isinstance(value, str):
        whole = re.fullmatch(_WHOLE, value)
        if whole and whole.group(1) in values and _admits_non_text(typ):
            return values[whole.group(1)]
        return substitute_text(value, values)
    if isinstance(value, list):
        item = _item_type(typ, list)
        new = [_substitute(v, values, item) for v in value]
        return value if all(a is b for a, b in zip(new, value, strict=True)) else new
    if isinstance(value, tuple):
        item = _item_type(typ, tuple)
        new_t = tuple(_substitute(v, values, item) for v in value)
        return value if all(a is b for a, b in zip(new_t, value, strict=True)) else new_t
    if isinstance(value, dict):
        item = _item_type(typ, dict)
        new_d = {k: _substitute(v, values, item) for k, v in value.items()}
        return value if all(new_d[k] is value[k] for k in value) else new_d
    if attrs.has(type(value)):
        hints = _field_types(type(value))
        changes = {}
        for field in attrs.fields(type(value)):
            if not field.init or field.name in _SKIP_FIELDS:
                continue
            old = getattr(value, field.name)
            new_v = _substitute(old, values, hints.get(field.name, str))
            if new_v is not old:
                changes[field.alias or field.name] = new_v
        return attrs.evolve(value, **changes) if changes else value
    return value


def uses_placeholders(raw: Any, names: Sequence[str]) -> bool:
    """Whether the task JSON as written mentions `{name}` for any of `names` (cheap precheck)."""
    import json

    text = raw if isinstance(raw, str) else json.dumps(raw)
    return any("{" + name + "}" in text for name in names)


def apply_seed(steps: Sequence[Any], values: Mapping[str, Any]) -> list[Any]:
    """The steps with placeholders substituted; unchanged steps are the same objects."""
    return [_substitute(step, values) for step in steps]
