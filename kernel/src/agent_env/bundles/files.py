"""Reading a bundle's files safely: nothing outside the bundle, strict JSON and TOML."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

# What operating systems and Python leave in folders; never part of an entity's content.
LEAVINGS = frozenset({"__pycache__", ".DS_Store", "Thumbs.db", ".git"})


class Problems:
    """Every problem found in one bundle, each as `<file relative to the root>: <message>`."""

    def __init__(self, root: Path):
        self.root = root
        self.items: list[str] = []

    def rel(self, path: Path) -> str:
        try:
            return Path(path).relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def add(self, path: Path | str | None, message: str) -> None:
        where = path if isinstance(path, str) else (self.rel(path) if path is not None else "")
        self.items.append(f"{where}: {message}" if where else message)


class _Obj(dict):
    """A JSON object that remembers keys it saw twice."""

    duplicates: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> _Obj:
    obj = _Obj()
    obj.duplicates = []
    for key, value in pairs:
        if key in obj and key not in obj.duplicates:
            obj.duplicates.append(key)
        obj[key] = value
    return obj


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _read_text(path: Path, problems: Problems) -> str | None:
    """The file's UTF-8 text (a BOM dropped), or None after recording why it cannot be read."""
    try:
        return path.read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        problems.add(path, f"cannot be read: {e}")
        return None


def load_json(path: Path, problems: Problems) -> Any:
    """The parsed JSON, or None after recording why it cannot be read (with line and column)."""
    text = _read_text(path, problems)
    if text is None:
        return None
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        problems.add(path, f"not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})")
    except (ValueError, RecursionError) as e:
        problems.add(path, f"not valid JSON: {e}")
    return None


def duplicate_keys(value: Any, path: str = "") -> list[str]:
    """One message per key repeated inside a parsed JSON value, with its path."""
    out: list[str] = []
    if isinstance(value, dict):
        for key in getattr(value, "duplicates", ()):
            out.append(f"{path + ': ' if path else ''}duplicate key {key!r}")
        for key, item in value.items():
            out.extend(duplicate_keys(item, f"{path}.{key}" if path else str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.extend(duplicate_keys(item, f"{path}[{index}]"))
    return out


def non_finite_numbers(value: Any, path: str = "") -> list[str]:
    """One message per number inside a parsed JSON / TOML value that is not finite (`1e400`
    parses as infinity; TOML also has `inf` and `nan`), with its path: no stored document,
    score or timeout can hold one."""
    if isinstance(value, float) and not math.isfinite(value):
        shown = (
            f"{value!r} is not a finite number (one beyond about 1.8e308, like 1e400, reads as inf)"
        )
        return [f"{path + ': ' if path else ''}{shown}"]
    if isinstance(value, dict):
        return [
            x
            for key, item in value.items()
            for x in non_finite_numbers(item, f"{path}.{key}" if path else str(key))
        ]
    if isinstance(value, list):
        return [x for i, item in enumerate(value) for x in non_finite_numbers(item, f"{path}[{i}]")]
    return []


def load_toml(path: Path, problems: Problems) -> dict[str, Any] | None:
    """The parsed TOML, or None after recording why it cannot be used (a syntax error, or
    each non-finite number with its key path)."""
    text = _read_text(path, problems)
    if text is None:
        return None
    import tomllib  # only a bundle with a TOML file pays for its regexes

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        problems.add(path, f"not valid TOML: {e}")
        return None
    bad = non_finite_numbers(data)
    for message in bad:
        problems.add(path, message)
    return None if bad else data


def inside(path: Path, root: Path, problems: Problems) -> bool:
    """False (and a problem) when `path` is a symlink, or under one, leading out of `root`."""
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        problems.add(path, "a broken symlink")
        return False
    if real != root and not real.is_relative_to(root):
        problems.add(path, f"a symlink to {real}, outside the bundle; bundles may not link out")
        return False
    return True


def list_dir(folder: Path, problems: Problems) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError as e:
        problems.add(folder, f"cannot be listed: {e}")
        return []


def content_files(folder: Path, root: Path, problems: Problems) -> dict[str, Path]:
    """Every regular file under `folder` (relative POSIX path -> host path), sorted; symlinks
    are followed only inside the bundle, loops are cut, OS leftovers skipped."""
    files: dict[str, Path] = {}
    seen: set[Path] = set()

    def walk(directory: Path, prefix: str) -> None:
        real_dir = directory.resolve()
        if real_dir in seen:
            return
        seen.add(real_dir)
        for entry in list_dir(directory, problems):
            if entry.name in LEAVINGS:
                continue
            path = Path(entry.path)
            if entry.is_symlink() and not inside(path, root, problems):
                continue
            rel = f"{prefix}{entry.name}"
            if entry.is_dir():
                walk(path, rel + "/")
            elif entry.is_file():
                files[rel] = path
            else:
                problems.add(path, "neither a regular file nor a folder")

    walk(folder, "")
    return dict(sorted(files.items()))
