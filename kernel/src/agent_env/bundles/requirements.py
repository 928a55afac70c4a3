"""The plugins a bundle needs (`bundle.toml`), checked against the installed distributions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agent_env.errors import BundleError


def declared_requirements(data: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(the requirements, one message per problem) of a parsed `bundle.toml`:
    `plugins = [...]` plus `[requires] plugins = [...]` (or `requires = [...]`)."""
    from agent_env.bundles.schema import BundleFile, read_model

    model, problems = read_model(data, BundleFile)
    return (model.requirements() if model is not None else []), problems


#: `reuse = ...` in `bundle.toml`: how a warm pool reuses the bundle's deployed task instances.
REUSE_MODES = ("reset", "redeploy")


def declared_reuse(data: Mapping[str, Any]) -> tuple[str | None, list[str]]:
    """(`reuse` of a parsed `bundle.toml` or None, one message per problem)."""
    value = data.get("reuse") if isinstance(data, Mapping) else None
    if value is None or value in REUSE_MODES:
        return value, []
    from agent_env.suggest import did_you_mean

    return None, [
        f"reuse: {value!r} is not a reuse mode{did_you_mean(str(value), REUSE_MODES)}; "
        f"give one of {', '.join(REUSE_MODES)}"
    ]


def bundle_toml_requirements(text: str, *, where: str) -> list[str]:
    """The requirements a `bundle.toml` text declares, for callers that have only that file
    (e.g. a remote source checking before it downloads the rest); `BundleError` if malformed."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BundleError(f"{where}: invalid TOML: {exc}") from None
    requirements, problems = declared_requirements(data)
    if problems:
        raise BundleError(f"{where}: invalid bundle.toml", problems)
    return requirements


def unmet_requirements(requirements: Iterable[str]) -> tuple[list[str], list[str]]:
    """Return (one message per unmet or malformed requirement, the requirements to install)."""
    requirements = list(requirements)
    if not requirements:  # most bundles: no need to import `packaging`
        return [], []
    from importlib.metadata import PackageNotFoundError, version

    from packaging.requirements import InvalidRequirement, Requirement

    problems: list[str] = []
    to_install: list[str] = []
    for text in requirements:
        try:
            req = Requirement(text)
        except InvalidRequirement as e:
            problems.append(f"bundle.toml: {text!r} is not a valid requirement: {e}")
            continue
        if req.marker is not None and not req.marker.evaluate():
            continue
        try:
            installed = version(req.name)
        except PackageNotFoundError:
            problems.append(f"needs plugin {text!r}, which is not installed")
            to_install.append(text)
            continue
        if req.specifier and not req.specifier.contains(installed, prereleases=True):
            problems.append(f"needs plugin {text!r}; installed: {req.name} {installed}")
            to_install.append(text)
    return problems, to_install


def check_requirements(
    requirements: Iterable[str], *, bundle: str, setup: str | None = None, where: str | None = None
) -> None:
    """Raise one `BundleError` naming every unmet requirement and the `pip install` line
    (`where` says which file or card declared them, when that is not the bundle's own)."""
    problems, to_install = unmet_requirements(requirements)
    if not problems:
        return
    if to_install:
        quoted = " ".join(f"'{r}'" for r in to_install)
        problems.append(f"install with: pip install {quoted}")
    if setup:
        problems.append(f"setup: {setup}")
    origin = f" (from {where})" if where else ""
    raise BundleError(f"bundle {bundle!r} needs plugins that are not installed{origin}", problems)
