"""The platform a computer driver runs on, as its card advertises it."""

from __future__ import annotations

import platform as _platform
import sys

import attrs


@attrs.frozen(kw_only=True)
class Platform:
    """What an agent needs to know about the computer: OS, distribution, version, CPU
    architecture and display server (x11, wayland, quartz, win32)."""

    os: str
    distribution: str | None = None
    version: str | None = None
    arch: str | None = None
    display: str | None = None

    def as_dict(self) -> dict:
        return {k: v for k, v in attrs.asdict(self).items() if v is not None}


_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64", "amd64": "amd64"}


def detect() -> Platform:
    """This host's platform, read from the standard library."""
    machine = _platform.machine().lower()
    arch = _ARCH.get(machine, machine or None)
    if sys.platform.startswith("linux"):
        info = (
            _platform.freedesktop_os_release()
            if hasattr(_platform, "freedesktop_os_release")
            else {}
        )
        return Platform(
            os="linux",
            distribution=info.get("ID"),
            version=info.get("VERSION_ID"),
            arch=arch,
            display="x11",
        )
    if sys.platform == "darwin":
        return Platform(
            os="macos", version=_platform.mac_ver()[0] or None, arch=arch, display="quartz"
        )
    if sys.platform == "win32":
        return Platform(
            os="windows", version=_platform.version() or None, arch=arch, display="win32"
        )
    return Platform(os=sys.platform, arch=arch)
