"""Turn a bundle spec into a local folder: a path, an installed bundle, or a plugin's source.

Installed bundles come from the `agent_env.bundles` entry-point group: `<bundle> = "<package>"`
names the folder `<package>/<bundle>/`, found without importing the package's code.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from typing import Any

import attrs

from agent_env.bundles.model import ResolvedSource
from agent_env.entrypoints import InstalledEntryPoint, installed, normalize_dist
from agent_env.errors import BundleError
from agent_env.suggest import did_you_mean

GROUP = "agent_env.bundles"
#: The distributions whose bundles are agent-env's own: a bare name prefers them.
OWN_DISTS = ("agentenv-kernel", "agentenv-framework")


def folder_id_prefix(path: Path) -> str:
    """`@local/<absolute folder>` (without a doubled slash)."""
    return "@local/" + path.resolve().as_posix().lstrip("/")


@attrs.frozen(kw_only=True)
class InstalledBundle:
    """A bundle an installed distribution registers: its folder, or why it cannot be used."""

    name: str
    dist: str  # normalized distribution name
    version: str
    package: str
    path: Path | None
    problem: str | None = None

    @property
    def id_prefix(self) -> str:
        return f"@local/{self.dist}/{self.name}"

    def source(self) -> ResolvedSource:
        if self.path is None:
            raise BundleError(f"installed bundle {self.name!r} ({self.dist}): {self.problem}")
        return ResolvedSource(
            path=self.path,
            provenance={
                "source": "installed",
                "dist": self.dist,
                "version": self.version,
                "bundle": self.name,
                "package": self.package,
            },
            id_prefix=self.id_prefix,
            name=self.name,
        )


def _package_folder(package: str, name: str) -> Path:
    """`<package>/<name>/` on disk, locating only the top-level package (no import of its code)."""
    if not re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*", package):
        raise ValueError(f"the entry point's value {package!r} is not a package name")
    if "/" in name or name in (".", ".."):
        raise ValueError(f"the bundle name {name!r} is not a folder name")
    top, *rest = package.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"the package {top!r} is not installed")
    for location in spec.submodule_search_locations:
        folder = Path(location, *rest, name)
        if folder.is_dir() and folder.name in os.listdir(folder.parent):
            return folder
    raise ValueError(f"the package {package!r} has no folder {name!r}")


def _installed(ep: InstalledEntryPoint) -> InstalledBundle:
    dist_name = normalize_dist(ep.dist) if ep.dist else "unknown"
    version = ep.version or "0"
    try:
        path = _package_folder(ep.value.strip(), ep.name)
        return InstalledBundle(
            name=ep.name, dist=dist_name, version=version, package=ep.value, path=path
        )
    except ValueError as e:
        return InstalledBundle(
            name=ep.name,
            dist=dist_name,
            version=version,
            package=ep.value,
            path=None,
            problem=str(e),
        )


def _same_dist(installed: str, asked: str) -> bool:
    """`asked` names the distribution `installed`; agent-env's own bundles answer to each of
    its distribution names (`agentenv-framework/hello`, as the existing `agent-env` names
    them, is the kernel's `hello`)."""
    asked = normalize_dist(asked)
    return installed == asked or (installed in OWN_DISTS and asked in OWN_DISTS)


def list_installed_bundles() -> list[InstalledBundle]:
    """Every bundle the installed distributions register, sorted by name then distribution."""
    found = [_installed(ep) for ep in installed(GROUP)]
    unique = {(b.name, b.dist): b for b in found}
    return sorted(unique.values(), key=lambda b: (b.name, b.dist))


def find_installed(
    spec: str, bundles: list[InstalledBundle] | None = None
) -> InstalledBundle | None:
    """The installed bundle named `<bundle>` or `<dist>/<bundle>`; None when nothing matches."""
    bundles = list_installed_bundles() if bundles is None else bundles
    dist, _, name = spec.rpartition("/")
    matches = [b for b in bundles if b.name == name and (not dist or _same_dist(b.dist, dist))]
    if not matches:
        return None
    if len(matches) > 1:
        own = [b for b in matches if b.dist in OWN_DISTS]
        if len(own) == 1:
            return own[0]
        names = ", ".join(f"{b.dist}/{b.name}" for b in matches)
        raise BundleError(
            f"several installed packages provide a bundle {name!r}; run one of {names}"
        )
    return matches[0]


def resolve_source(spec: str, plugins: Any) -> ResolvedSource:
    """Resolve `spec`: an existing folder, an installed bundle name, else what a plugin claims."""
    if "://" not in spec:
        path = Path(spec).expanduser()
        if path.is_dir():
            resolved = path.resolve()
            return ResolvedSource(
                path=resolved, provenance={"source": "folder", "path": str(resolved)}
            )
        if path.exists():
            raise BundleError(
                f"{spec}: not a folder (a bundle is a folder with tasks/, envs/, ...)"
            )
        bundles = list_installed_bundles()
        installed = find_installed(spec, bundles)
        if installed is not None:
            return installed.source()
    else:
        bundles = None
    claimed = plugins.resolve_bundle_source(spec) if plugins is not None else None
    if claimed is not None:
        if isinstance(claimed, (str, os.PathLike)):
            claimed = ResolvedSource(
                path=Path(claimed), provenance={"source": "plugin", "spec": spec}
            )
        return claimed
    if "://" in spec:
        from agent_env.plugins.known import distribution

        scheme = spec.split("://", 1)[0]
        dist = distribution("bundle source", scheme)
        raise BundleError(
            f"{spec!r}: no installed plugin handles {scheme}:// bundle specs"
            + (f" (install {dist})" if dist else "")
        )
    if spec.startswith((".", "/", "~")) or spec.count("/") > 1:
        raise BundleError(f"{spec}: no such folder")
    bundles = list_installed_bundles() if bundles is None else bundles
    names = sorted({b.name for b in bundles} | {f"{b.dist}/{b.name}" for b in bundles})
    listing = ", ".join(names) if names else "none are installed"
    raise BundleError(
        f"{spec!r} is neither a folder nor an installed bundle{did_you_mean(spec, names)}; "
        f"installed bundles: {listing}"
    )
