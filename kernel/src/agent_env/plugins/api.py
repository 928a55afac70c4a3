"""The plugin API version: what the kernel offers plugins, and the range a plugin declares.

A plugin's `hooks.py` declares `AGENTENV_PLUGIN_API = ">=1.0,<2"` (a PEP 440 specifier set).
The minor number grows when hooks or interfaces are added, the major one when something a
plugin may use changes or goes. A plugin whose range excludes `PLUGIN_API_VERSION` is shown
as `incompatible` by `agent-env plugin list|check` and its hooks are never called.
"""

from __future__ import annotations

import ast
import re
from typing import Any

PLUGIN_API_VERSION = "1.0"
#: The module attribute in a plugin's hooks module that declares the supported range.
API_ATTRIBUTE = "AGENTENV_PLUGIN_API"


#: One clause of a range made only of release numbers (`>=1.0`, `<2`), which `_release_range`
#: decides without `packaging` (about 30 ms to import, paid by every command otherwise).
_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|<|>)\s*(\d+(?:\.\d+)*)\s*$")


def _release(text: str) -> tuple[int, ...]:
    parts = [int(p) for p in text.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _release_range(declared: str, version: str) -> bool | None:
    """Whether release `version` is in `declared` when every clause compares release numbers
    (PEP 440 gives the same answer there: trailing zeros do not matter); None otherwise."""
    clauses = [_CLAUSE.match(c) for c in declared.split(",")]
    if not all(clauses) or not re.fullmatch(r"\d+(?:\.\d+)*", version):
        return None
    have = _release(version)
    checks = {
        ">=": lambda v: have >= v,
        "<=": lambda v: have <= v,
        "==": lambda v: have == v,
        "!=": lambda v: have != v,
        "<": lambda v: have < v,
        ">": lambda v: have > v,
    }
    return all(checks[m.group(1)](_release(m.group(2))) for m in clauses if m)


def api_problem(declared: Any, version: str = PLUGIN_API_VERSION) -> str | None:
    """Why a plugin declaring `declared` cannot run on API `version`, or None when it can."""
    if declared is None:
        return None
    if not isinstance(declared, str):
        return f"{API_ATTRIBUTE} must be a version range string like '>=1.0,<2', not {declared!r}"
    inside = _release_range(declared, version)
    if inside is None:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet

        try:
            inside = version in SpecifierSet(declared)
        except InvalidSpecifier:
            return f"{API_ATTRIBUTE} = {declared!r} is not a version range (try '>=1.0,<2')"
    if inside:
        return None
    return (
        f"supports plugin API {declared} but this agent-env offers plugin API {version}: "
        f"install a release of the plugin built for API {version.split('.')[0]}.x"
    )


def declared_api_in_source(source: str) -> str | None:
    """The `AGENTENV_PLUGIN_API` string assigned at the top level of `source`, read without
    importing it (for a hooks module that fails to import)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        value = getattr(node, "value", None)
        for target in targets:
            if (
                isinstance(target, ast.Name)
                and target.id == API_ATTRIBUTE
                and isinstance(value, ast.Constant)
                and isinstance(value.value, str)
            ):
                return value.value
    return None


def declared_api_of_module(module: str) -> str | None:
    """The declared range of an installed module (`pkg.hooks` or `pkg.hooks:obj`), read from its
    source file without importing it or its package; None when it cannot be found."""
    import sys
    from pathlib import Path

    parts = module.split(":")[0].split(".")
    for entry in sys.path:
        base = Path(entry or ".").joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                try:
                    return declared_api_in_source(candidate.read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError):
                    return None
    return None
