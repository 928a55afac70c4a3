"""Bundles (DESIGN.md §3.4): resolve a spec to a folder, parse and validate it, materialize it.

- `load_bundle(spec, plugins)` -> `Bundle` (every problem in one `BundleError`)
- `list_installed_bundles()` -> the `agent_env.bundles` entry points
- `await materialize(bundle, stores, dry_run=False)` -> `Materialized`
- `resolve_dependencies(steps)` (in `dag`) -> the step DAG the engine runs
- `read_model(data, cls)` -> (model or None, problems): a parsed file (TOML, a card's YAML)
  structured into an attrs class by the kernel's converter, as the parser reads bundle files
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_env.bundles.dag import dependency_problems, resolve_dependencies

# Imported eagerly: importing the submodule `materialize` later would otherwise replace the
# package attribute `materialize` (this function) with the module.
from agent_env.bundles.materialize import fetch_files, materialize
from agent_env.bundles.model import (
    ArtifactSpec,
    Bundle,
    EvalSpec,
    FolderSpec,
    Materialized,
    MaterializedArtifact,
    ResolvedSource,
    Task,
)
from agent_env.bundles.requirements import bundle_toml_requirements, check_requirements
from agent_env.bundles.schema import read_model
from agent_env.bundles.source import InstalledBundle, list_installed_bundles, resolve_source

__all__ = [
    "ArtifactSpec",
    "Bundle",
    "EvalSpec",
    "FolderSpec",
    "InstalledBundle",
    "Materialized",
    "MaterializedArtifact",
    "ResolvedSource",
    "Task",
    "bundle_toml_requirements",
    "check_requirements",
    "dependency_problems",
    "fetch_files",
    "list_installed_bundles",
    "load_bundle",
    "materialize",
    "read_model",
    "read_steps",
    "resolve_dependencies",
    "resolve_source",
]


def load_bundle(spec: str | Any, plugins: Any) -> Bundle:
    """Resolve `spec` (folder, installed bundle name, or a plugin source such as hf://, or an
    already `ResolvedSource`), then parse and validate it; its `warnings` are logged once."""
    from agent_env.bundles.parse import parse_bundle
    from agent_env.notices import warn_once

    source = spec if isinstance(spec, ResolvedSource) else resolve_source(str(spec), plugins)
    bundle = parse_bundle(source, plugins)
    warn_once(f"{bundle.root}: {w}" for w in bundle.warnings)
    return bundle


def read_steps(path: Path, plugins: Any) -> list[Any]:
    """The steps of a task-shaped JSON file outside a bundle (a JSON array of step objects,
    e.g. the verifiers `runs regrade --verifier FILE` applies), structured and checked as a
    bundle's task is; `BundleError` listing every problem, with the file and step, otherwise."""
    from agent_env.bundles.files import Problems
    from agent_env.bundles.tasks import read_task
    from agent_env.errors import BundleError

    path = Path(path)
    problems = Problems(path.parent)
    _, steps, ok = read_task(path, plugins.step_types, problems)
    if not ok or steps is None:
        raise BundleError("; ".join(problems.items) or f"{path}: no steps")
    return steps
