"""Plugin requirements of a Hub bundle, checked against what is installed before anything runs."""

from __future__ import annotations

import tomllib
from importlib import metadata

from agent_env.errors import BundleError


def bundle_toml_requirements(text: str, *, where: str) -> list[str]:
    """The plugins a `bundle.toml` lists: `plugins = [...]` plus `[requires] plugins` (or `requires = [...]`)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BundleError(f"{where}: invalid TOML: {exc}") from None
    plugins = data.get("plugins", [])
    requires = data.get("requires")
    if isinstance(requires, dict):
        requires = requires.get("plugins", [])
    if requires is not None and isinstance(plugins, list) and isinstance(requires, list):
        plugins = [*plugins, *requires]
    if not isinstance(plugins, list) or not all(isinstance(p, str) for p in plugins):
        raise BundleError(f"{where}: plugins: expected a list of requirement strings")
    return list(dict.fromkeys(plugins))


def unmet(requirements: list[str] | tuple[str, ...], *, where: str) -> list[str]:
    """One line per requirement the installed distributions don't satisfy, saying what is there."""
    from packaging.requirements import InvalidRequirement, Requirement

    problems = []
    for text in requirements:
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise BundleError(f"{where}: invalid plugin requirement {text!r}: {exc}") from None
        try:
            installed = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            problems.append(f"{text}: {req.name} is not installed")
            continue
        if req.specifier and not req.specifier.contains(installed, prereleases=True):
            problems.append(f"{text}: {req.name} {installed} is installed")
    return problems


def check(requirements, *, setup: str | None, where: str, bundle: str) -> None:
    """Raise a `BundleError` listing every unmet requirement plus the bundle's setup hint."""
    problems = unmet(requirements, where=where)
    if not problems:
        return
    message = f"{bundle} needs plugins that are not installed (from {where})"
    if setup:
        problems.append(f"setup: {setup}")
    else:
        problems.append("install them, e.g. `pip install " + " ".join(repr(r) for r in requirements) + "`")
    raise BundleError(message, problems)
