"""A cache of the code attrs and dataclasses generate, for the console script's start-up.

Every `@attrs.define` class has its methods written as Python source and compiled when its
module is imported, dataclasses does the same for each `@dataclass`, and `typing` compiles
each string annotation that `get_type_hints` resolves (structuring asks for every class it
structures, `attrs.resolve_types`) as an expression: in
`agent-env run hello` that compiling was about a tenth of the command's CPU, redone
identically by every process. Python caches the bytecode of modules in `__pycache__`; this
does the same for that generated source, in one file under the cache folder.

What is cached is the code a fresh compile gives: the key is the source text itself and its
file name, the file is per Python version and per command line (the command's word, plus a
checksum of the words after it: `run hello` loads only what `run hello` builds, not what
every bundle ever run built, 1.9 MB where it needs 0.5), and the code is compiled with the
flags the generator's module compiles with. One part of attrs' source differs per process:
a frozen class's `__hash__` carries `hash()` of a string, which Python salts per process.
That literal is cached as a placeholder and put back into the code's constants on use (the
compiler folds a negative literal into one constant);
the one trace of it is the column span recorded for that constant, which cannot raise, so no
traceback shows it. Whatever goes wrong with the file (missing, stale, corrupt, unwritable)
means compiling as before; it is rewritten at exit only when something new was compiled.
"""

from __future__ import annotations
import __future__

import atexit
import builtins
import functools
import marshal
import sys
from _ast import PyCF_ONLY_AST
from collections.abc import Callable, Sequence
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from agent_env.cli.cachefiles import command_line_name, loaded, prune

#: Bumped when the file's layout changes.
FORMAT = 1
#: Entries kept: past this, a rewrite keeps only what the writing process used.
LIMIT = 4000
#: The modules that generate code, and the builtin each calls with the source: it goes through
#: the cache (dataclasses `exec`s the source of each generated method).
GENERATORS = {
    "attr._make": "compile",
    "dataclasses": "exec",
    # each string annotation `get_type_hints` resolves (structuring asks for every class it
    # structures) is compiled as an expression by `typing.ForwardRef`
    "typing": "compile",
}

#: The file names of attrs scripts that may hold a `__hash__` (then with a salted literal).
_HASH_PREFIXES = ("<attrs generated methods ", "<attrs generated __hash__ ")
#: Stands for the salted literal: as wide as the widest (`-9223372036854775808`).
PLACEHOLDER = "7" * 20

_entries: dict[tuple[Any, ...], CodeType] = {}
_used: set[tuple[Any, ...]] = set()
_state: dict[str, Any] = {
    "loaded": False,
    "dirty": False,
    "installed": False,
    "hits": 0,
    "misses": 0,
    "command": "",
    "detail": "",
}


def install(command: str = "", detail: Sequence[str] = ()) -> None:
    """Route the code attrs and dataclasses generate through the cache, once per
    process: a generator already imported is patched now, the others as they are imported,
    before they run (attrs builds classes of its own; installing imports nothing); one that
    is missing, or compiles another way, is left alone. `command` and `detail` (the words
    after it) choose the file (`path`)."""
    if _state["installed"]:
        return
    _state["installed"] = True
    _state["command"] = command
    _state["detail"] = "\0".join(detail)
    pending = set()
    for name in GENERATORS:
        module = sys.modules.get(name)
        if module is None:
            pending.add(name)
        else:
            _patch(module)
    if pending:
        sys.meta_path.insert(0, _PatchOnImport(pending))
    atexit.register(save)


def _patch(module: ModuleType) -> None:
    """Give `module` a `compile` (or `exec`) of its own that goes through the cache; also
    before the module runs (its global shadows the builtin from the start: attrs builds its
    own classes as it is imported). The module's `__future__` flags are read at the first
    call, once its future imports (always first) have run."""

    @functools.cache
    def inherited() -> int:
        return _future_flags(module)

    if GENERATORS[module.__name__] == "exec":
        module.exec = _cached_exec(inherited)  # type: ignore[attr-defined]
    else:
        module.compile = _cached_compile(inherited)  # type: ignore[attr-defined]


class _PatchOnImport:
    """A meta path finder that patches each of `names` once it has been imported."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in self.names:
            return None
        self.names.discard(name)
        if not self.names:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None and finder is not self else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_and_patch(module: ModuleType) -> None:
            del loader.exec_module  # once: a loader may serve other modules (a zip's)
            if module.__name__ == name:
                _patch(module)
            exec_module(module)

        loader.exec_module = exec_and_patch
        return spec


def path(command: str | None = None, detail: Sequence[str] | None = None) -> Path:
    """The cache file of this Python and command line: `command` (its first word) and `detail`
    (the words after it); default: the installed ones. Bytecode is per version, and a command
    line loads only what such a command line built."""
    from agent_env.paths import cache_dir

    tag = sys.implementation.cache_tag or "python"
    name = _state["command"] if command is None else command
    rest = _state["detail"] if detail is None else "\0".join(detail)
    return cache_dir() / "generated-code" / f"{tag}-{command_line_name(name, rest)}.marshal"


def _future_flags(module: ModuleType) -> int:
    """The `__future__` flags `module`'s own `compile` calls inherit."""
    flags = 0
    for value in vars(module).values():
        if isinstance(value, __future__._Feature):
            flags |= value.compiler_flag
    return flags


def _cached_compile(inherited: Callable[[], int]) -> Callable[..., Any]:
    """A `compile` for a module whose own calls inherit the future flags `inherited()`."""

    def compile(
        source: Any,
        filename: Any,
        mode: str,
        flags: int = 0,
        dont_inherit: bool = False,
        optimize: int = -1,
    ) -> Any:
        if not dont_inherit:
            flags |= inherited()
        if (
            mode not in ("exec", "eval")
            or optimize != -1
            or flags & PyCF_ONLY_AST
            or not isinstance(source, str)
        ):
            return builtins.compile(source, filename, mode, flags, True, optimize)
        return lookup(source, str(filename), flags, mode)

    return compile


def _cached_exec(inherited: Callable[[], int]) -> Callable[..., Any]:
    """An `exec` for a module whose own calls inherit the future flags `inherited()` (a string
    runs as `exec` compiles it: file name `<string>`)."""

    def exec(source: Any, globals: Any = None, locals: Any = None, /, **kwargs: Any) -> None:
        if isinstance(source, str) and not kwargs:
            source = lookup(source, "<string>", inherited())
        builtins.exec(source, globals, locals, **kwargs)

    return exec


def lookup(source: str, filename: str, flags: int, mode: str = "exec") -> CodeType:
    """The code of `source` as `compile(source, filename, mode, flags)` gives it (`mode`:
    "exec", or "eval" for an expression; its key holds the mode and the flags)."""
    if not _state["loaded"]:
        _load()
    salted = salted_literal(source, filename) if mode == "exec" else None
    key_source = source
    if salted is not None:
        key_source = source.replace(salted, PLACEHOLDER)
    key: tuple[Any, ...] = (
        (filename, key_source) if mode == "exec" else (filename, source, mode, flags)
    )
    code = _entries.get(key)
    if code is None:
        code = builtins.compile(key_source, filename, mode, flags, True)
        _entries[key] = code
        _state["dirty"] = True
        _state["misses"] += 1
    else:
        _state["hits"] += 1
    _used.add(key)
    if salted is not None:
        code = _swap_in_hash(code, int(PLACEHOLDER), int(salted))
    return code


def salted_literal(source: str, filename: str) -> str | None:
    """The per-process `hash()` literal in an attrs methods script, when it has exactly one
    (attrs writes `hash("<attrs generated hash MODULE.CLASS>")` into `__hash__`, in the
    script of a class's methods or, for attrs' own classes, one of `__hash__` alone)."""
    prefix = next((p for p in _HASH_PREFIXES if filename.startswith(p)), None)
    if prefix is None or "def __hash__" not in source:
        return None
    name = filename[len(prefix) : -1]
    literal = str(hash(f"<attrs generated hash {name}>"))
    if len(literal.lstrip("-")) < 12 or source.count(literal) != 1 or PLACEHOLDER in source:
        return None
    return literal


def _swap_in_hash(script: CodeType, old: int, new: int) -> CodeType:
    """`_swap_constant` of an attrs methods script, rebuilding only its `__hash__` (the one
    place attrs writes the literal): rebuilding every method's code object cost more than a
    millisecond per command. A script whose `__hash__` turns out not to hold it gets the
    swap everywhere."""
    consts = list(script.co_consts)
    found = False
    for i, const in enumerate(consts):
        if isinstance(const, CodeType) and const.co_name == "__hash__":
            swapped = _swap_constant(const, old, new)
            found = found or swapped.co_consts != const.co_consts
            consts[i] = swapped
    if not found:
        return _swap_constant(script, old, new)
    return script.replace(co_consts=tuple(consts))


def _swap_constant(code: CodeType, old: int, new: int) -> CodeType:
    """`code` with the int constant `old` replaced by `new`: in nested code objects too, and in
    the tuples the compiler folds constants into (`hash((salt,))` of a class without fields)."""
    return code.replace(co_consts=tuple(_swapped(c, old, new) for c in code.co_consts))


def _swapped(const: Any, old: int, new: int) -> Any:
    if isinstance(const, CodeType):
        return _swap_constant(const, old, new)
    if type(const) is int and const == old:
        return new
    if type(const) in (tuple, frozenset):
        return type(const)(_swapped(c, old, new) for c in const)
    return const


def _load() -> None:
    _state["loaded"] = True
    try:
        target = path()
        data = marshal.loads(target.read_bytes())
        if data["format"] == FORMAT and data["python"] == sys.version:
            _entries.update(data["entries"])
            loaded(target)
    except (OSError, ValueError, EOFError, KeyError, TypeError):
        pass


def save() -> None:
    """Write the file when this process compiled something new (at exit)."""
    if not _state["dirty"]:
        return
    _state["dirty"] = False
    entries = _entries if len(_entries) <= LIMIT else {k: _entries[k] for k in _used}
    data = {"format": FORMAT, "python": sys.version, "entries": entries}
    try:
        from agent_env.fsutil import atomic_write

        target = path()
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, marshal.dumps(data), fsync=False)
        prune(target.parent)
    except (OSError, ValueError):
        pass


def stats() -> dict[str, int]:
    """How many compiles this process took from the cache (`hits`) and made (`misses`)."""
    return {"hits": _state["hits"], "misses": _state["misses"]}
