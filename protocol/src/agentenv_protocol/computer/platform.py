"""The platform a computer driver runs on, how an operation's mark names the platforms it
works on (predicates), and what a driver class declares it supports."""

from __future__ import annotations

import itertools
import os
import platform as _platform
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

PREDICATES = ("os", "distribution", "version", "arch", "display")
_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
OS_RELEASE = Path("/etc/os-release")


@attrs.frozen
class Platform:
    """What an agent needs to know about the computer: OS, distribution, version, CPU
    architecture and display server (x11, wayland)."""

    os: str
    distribution: str | None = None
    version: str | None = None
    arch: str | None = None
    display: str | None = None

    def as_dict(self) -> dict:
        return {k: v for k, v in attrs.asdict(self).items() if v is not None}


def _os_release(path: Path) -> dict[str, str]:
    try:
        text = path.read_text()
    except OSError:
        return {}
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.startswith("#"):
            values[key.strip()] = value.strip().strip('"')
    return values


def _display(environ: Mapping[str, str]) -> str | None:
    session = environ.get("XDG_SESSION_TYPE", "").lower()
    if session in ("wayland", "x11"):
        return session
    if environ.get("WAYLAND_DISPLAY"):
        return "wayland"
    if environ.get("DISPLAY"):
        return "x11"
    return None


def detect(environ: Mapping[str, str] | None = None, release: Path = OS_RELEASE) -> Platform:
    """This host's platform: the OS, os-release's ID and VERSION_ID on Linux, the CPU and the
    display server the session names."""
    environ = os.environ if environ is None else environ
    machine = _platform.machine().lower()
    arch = _ARCH.get(machine, machine or None)
    if sys.platform.startswith("linux"):
        info = _os_release(release)
        return Platform("linux", info.get("ID"), info.get("VERSION_ID"), arch, _display(environ))
    if sys.platform == "darwin":
        return Platform("macos", arch=arch)
    if sys.platform == "win32":
        return Platform("windows", arch=arch)
    return Platform(sys.platform, arch=arch)


def normalize(predicates: Mapping[str, object]) -> dict[str, frozenset[str]]:
    """Predicates as sets of accepted values; an unknown predicate is a TypeError."""
    unknown = sorted(set(predicates) - set(PREDICATES))
    if unknown:
        raise TypeError(f"unknown predicate(s) {unknown}; predicates are {list(PREDICATES)}")
    normalized: dict[str, frozenset[str]] = {}
    for key, value in predicates.items():
        values: Any = [value] if isinstance(value, str) else value
        normalized[key] = frozenset(values)
    return normalized


def matches(predicates: Mapping[str, frozenset[str]], platform: Platform) -> bool:
    return all(getattr(platform, key) in values for key, values in predicates.items())


def overlap(a: Mapping[str, frozenset[str]], b: Mapping[str, frozenset[str]]) -> bool:
    """Whether one platform could match both predicate sets (an absent key matches anything)."""
    return all(a[key] & b[key] for key in set(a) & set(b))


def supported(entry: Mapping) -> list[Platform]:
    """The platforms one `supports` entry names: `{"os": {"type": ..., "distribution": ...,
    "version": [...], "display": ...}, "arch": [...]}`, every combination of its lists."""
    system = entry.get("os")
    if not isinstance(system, Mapping) or "type" not in system:
        raise ValueError(f"a supports entry names its os as {{'type': ...}}, got {system!r}")

    def values(value: object) -> list:
        if value is None:
            return [None]
        return [value] if isinstance(value, str) else list(value)  # type: ignore[call-overload]

    axes = [values(system.get(k)) for k in ("distribution", "version", "display")]
    return [
        Platform(system["type"], distribution, version, arch, display)
        for distribution, version, display, arch in itertools.product(
            *axes, values(entry.get("arch"))
        )
    ]
