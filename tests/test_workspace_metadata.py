"""The workspace's distributions as published metadata: each one carries the licence text and
pins its siblings to the one shared version. Read from the pyproject files (fast, no build);
tests/test_distributions.py checks the built wheels."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def members() -> list[Path]:
    """The root and every folder `[tool.uv.workspace] members` names."""
    workspace = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]
    found = [ROOT]
    for pattern in workspace["members"]:
        found += sorted(p for p in ROOT.glob(pattern) if (p / "pyproject.toml").is_file())
    return found


def project(folder: Path) -> dict:
    return tomllib.loads((folder / "pyproject.toml").read_text())["project"]


def test_every_distribution_ships_the_licence_and_the_notice():
    problems = []
    for folder in members():
        where = folder.relative_to(ROOT).as_posix() or "."
        meta = project(folder)
        if meta.get("license") != "Apache-2.0":
            problems.append(f"{where}/pyproject.toml: license = {meta.get('license')!r}")
        if meta.get("license-files") != ["LICENSE", "NOTICE"]:
            problems.append(f'{where}/pyproject.toml: set license-files = ["LICENSE", "NOTICE"]')
        for name in ("LICENSE", "NOTICE"):
            copy = folder / name
            if not copy.is_file() or copy.is_symlink():
                problems.append(
                    f"{where}/{name}: missing (copy the root's; a symlink breaks sdists)"
                )
            elif copy.read_bytes() != (ROOT / name).read_bytes():
                problems.append(f"{where}/{name}: differs from the root's {name}")
    assert not problems, "\n".join(problems)
    assert "Apache License" in (ROOT / "LICENSE").read_text()[:200]


def test_the_distributions_pin_each_other_to_one_version():
    metas = {canonicalize_name(project(f)["name"]): project(f) for f in members()}
    versions = {name: meta["version"] for name, meta in metas.items()}
    assert len(set(versions.values())) == 1, f"one version for the whole workspace: {versions}"
    (version,) = set(versions.values())
    loose = []
    for name, meta in metas.items():
        requirements = list(meta.get("dependencies", []))
        for extra in meta.get("optional-dependencies", {}).values():
            requirements += extra
        for text in requirements:
            requirement = Requirement(text)
            if (
                canonicalize_name(requirement.name) in metas
                and str(requirement.specifier) != f"=={version}"
            ):
                loose.append(f"{name}: {text!r} (write {requirement.name}=={version})")
    assert not loose, "workspace siblings must be pinned:\n" + "\n".join(loose)
