"""Types: mypy checks every package, strictly on what plugin authors import, and a plugin built
outside the tree gets the kernel's types from the installed packages (their `py.typed`).

`scripts/test` runs mypy over the tree; these tests keep its configuration from drifting away
from the package list and the public-module list, and check what only an installed package
shows: that a third-party plugin type-checks against the kernel it depends on.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THIRD_PARTY = ROOT / "tests" / "fixtures" / "thirdparty-plugin" / "src" / "agentenv_acme"

#: Packages whose source mypy does not check yet, with why (none: every package is checked).
NOT_CHECKED: dict[str, str] = {}

#: The flags `--strict` turns on that a per-module section can set (`strict = true` cannot:
#: mypy would turn strict on for every module).
STRICT_FLAGS = {
    "disallow_any_generics": True,
    "disallow_subclassing_any": True,
    "disallow_untyped_calls": True,
    "disallow_untyped_defs": True,
    "disallow_incomplete_defs": True,
    "check_untyped_defs": True,
    "disallow_untyped_decorators": True,
    "warn_unused_ignores": True,
    "warn_return_any": True,
    "implicit_reexport": False,
    "strict_equality": True,
    "extra_checks": True,
}


def _mypy_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]


def _public_modules() -> set[str]:
    spec = importlib.util.spec_from_file_location("_public_api", ROOT / "tests/test_public_api.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    prefixes = {p.rstrip(".") for p in module.PUBLIC_PREFIXES}
    return set(module.PUBLIC_MODULES) | prefixes | {f"{p}.*" for p in prefixes}


def test_mypy_checks_the_source_of_every_workspace_package() -> None:
    members = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]
    packages = {
        str(p.parent.relative_to(ROOT) / "src")
        for pattern in members["members"]
        for p in ROOT.glob(f"{pattern}/pyproject.toml")
    }
    assert "kernel/src" in packages and len(packages) > 5
    assert set(_mypy_config()["files"]) == packages - set(NOT_CHECKED)


def test_the_kernel_public_modules_are_checked_strictly() -> None:
    strict = [
        section
        for section in _mypy_config().get("overrides", [])
        if all(section.get(flag) == value for flag, value in STRICT_FLAGS.items())
    ]
    assert len(strict) == 1, "one override section carries the strict flags"
    assert "strict" not in _mypy_config(), "strict is for the public modules only"
    missing = _public_modules() - set(strict[0]["module"])
    assert not missing, f"public modules not checked strictly: {sorted(missing)}"


def test_a_third_party_plugin_type_checks_against_the_installed_kernel(tmp_path: Path) -> None:
    # a misuse the kernel's types catch (failure_class is keyword-only): without them (no
    # py.typed) mypy would see agent_env as an untyped module and find nothing
    misuse = tmp_path / "misuse.py"
    misuse.write_text(
        "from agent_env.errors import StepFailed\n"
        "StepFailed('box', 'the gateway did not answer', 'infrastructure')\n"
    )
    # run outside the checkout, so the kernel is found as an installed package and not
    # through the tree's configuration
    result = subprocess.run(
        [
            *(sys.executable, "-m", "mypy", "--config-file", ""),
            *("--cache-dir", str(tmp_path / "cache"), "--python-version", "3.11"),
            *("--ignore-missing-imports", str(THIRD_PARTY), str(misuse)),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, result.stdout + result.stderr
    assert errors[0].startswith("misuse.py:2:") and '"StepFailed"' in errors[0], errors
