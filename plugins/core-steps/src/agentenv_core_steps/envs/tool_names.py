"""The tool names an env folder serves, read without running it: `tools` in `env.toml`, else
the functions its Python files decorate with `@tool` / `@tool("name")` / `@x.tool(...)`.

None when they cannot be known that way (no decorated function found, a name built at run
time such as `"{environment_name}_send"`, a file that does not parse): then nothing is warned.
"""

from __future__ import annotations

import ast
from pathlib import Path

#: The tools the run gateway serves itself next to every env's (`GET_TIME_TOOL` of
#: `agentenv_protocol.gateway.clock`, not imported: checking a bundle starts no gateway).
GATEWAY_TOOLS = frozenset({"get_time"})
#: Folders never scanned (virtualenvs, caches); and a cap so a vendored tree costs little.
_SKIP = frozenset({".venv", "venv", "__pycache__", "site-packages", "node_modules", ".git"})
_MAX_FILES = 50


def _decorator_name(node: ast.expr, default: str) -> str | None:
    """The tool name a decorator gives, `default` when it does not name one, "" when it is
    not a tool decorator, None when the name is not a literal."""
    call = node if isinstance(node, ast.Call) else None
    target = call.func if call is not None else node
    name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", None)
    if name != "tool":
        return ""
    if call is None:
        return default
    given = call.args[0] if call.args else None
    given = next((k.value for k in call.keywords if k.arg == "name"), given)
    if given is None:
        return default
    if isinstance(given, ast.Constant) and isinstance(given.value, str) and "{" not in given.value:
        return given.value
    return None


def scanned_tools(folder: Path) -> frozenset[str] | None:
    """The `@tool` functions of the folder's Python files (see the module docstring)."""
    files = [
        p for p in sorted(folder.rglob("*.py")) if not _SKIP & set(p.relative_to(folder).parts)
    ]
    found: set[str] = set()
    for path in files[:_MAX_FILES]:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            return None
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for decorator in node.decorator_list:
                name = _decorator_name(decorator, node.name)
                if name is None:
                    return None
                if name:
                    found.add(name)
    return frozenset(found) or None
