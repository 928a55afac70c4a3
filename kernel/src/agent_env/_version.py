"""The installed version, read from the distribution metadata without importing
`importlib.metadata` (its email parser costs more than the rest of `agent-env --version`)."""

import os
import sys


def _search_order() -> list[str]:
    """`sys.path`, the folders installers write metadata to first (`site-packages`,
    `dist-packages`): the standard library's folders, listed for nothing, come before them
    and hold hundreds of names."""
    likely = [e for e in sys.path if os.path.basename(e) in ("site-packages", "dist-packages")]
    return likely + [e for e in sys.path if e not in likely]


def _installed_version(dist: str = "agentenv-kernel") -> str:
    prefix = dist.replace("-", "_") + "-"
    for entry in _search_order():
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.startswith(prefix) and name.endswith(".dist-info"):
                try:
                    with open(os.path.join(entry or ".", name, "METADATA"), encoding="utf-8") as fh:
                        for line in fh:
                            if line.startswith("Version:"):
                                return line.partition(":")[2].strip()
                            if not line.strip():
                                break
                except OSError:
                    continue
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


__version__ = _installed_version()
