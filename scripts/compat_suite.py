"""Run the existing product's own protocol test suite against our packages, and count.

The existing product (`agentenv-framework-protocol`, pinned below by version and hash) ships
its tests in its sdist. This script downloads that sdist from the package index into a cache
folder, unpacks its `tests/` into a scratch folder (never into this tree), and runs them twice
in scratch venvs: once against the existing product itself (the list of tests and what passes
there) and once against our workspace packages. It prints passed / failed / cannot-import per
file and per category, and the pass rate of the tests that use only the product's public names
(files that import a private name, `_x` or a `_module`, are counted separately).

    uv run python scripts/compat_suite.py [--cache DIR] [--json] [-k EXPR]

Exit code 0 when it ran (whatever the counts), 2 when something could not be set up.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SDIST_NAME = "agentenv-framework-protocol"
SDIST_VERSION = "0.1.379"
SDIST_FILE = "agentenv_framework_protocol-0.1.379.tar.gz"
SDIST_SHA256 = "ff42a84811eaf20ddbd527d98b66091ba8d00ca8e8a680da458bfe2331bb10d9"
#: Our distributions the suite runs against (editable, from this checkout).
OURS = ("protocol", "kernel", "plugins/core-steps")
#: The extras of ours the suite installs: `computer` (Pillow) for agentenv_protocol.computer.
OUR_EXTRAS = {"protocol": "computer"}
#: The import package whose names the suite's tests use.
PACKAGE = "agentenv_protocol"


class SetupError(Exception):
    """Something the suite needs could not be had (download, hash, venv, install)."""


def run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    """`cmd` with its output captured; `SetupError` with its last lines when it fails."""
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise SetupError(f"{' '.join(map(str, cmd[:4]))} ... failed ({done.returncode}):\n{tail}")
    return done


def our_requirement(path: str) -> str:
    """The editable requirement of one of our packages, with the extras the suite needs."""
    extra = OUR_EXTRAS.get(path)
    return f"{ROOT / path}[{extra}]" if extra else str(ROOT / path)


def fetch_sdist(cache: Path) -> Path:
    """The pinned sdist in `cache`, downloaded once and checked against its hash every time."""
    target = cache / SDIST_FILE
    if not target.exists():
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            pip = [sys.executable, "-m", "pip"]
            if subprocess.run([*pip, "--version"], capture_output=True).returncode != 0:
                pip = ["uvx", "pip"]
            spec = f"{SDIST_NAME}=={SDIST_VERSION}"
            run([*pip, "download", "--no-deps", "--no-binary", ":all:", "-d", tmp, spec])
            os.replace(Path(tmp) / SDIST_FILE, target)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        raise SetupError(f"{target}: sha256 {digest}, expected {SDIST_SHA256}")
    return target


def unpack(sdist: Path, scratch: Path) -> tuple[Path, list[str]]:
    """(the unpacked tests folder, the sdist's `dev` extra) under `scratch`."""
    with tarfile.open(sdist) as tar:
        tar.extractall(scratch, filter="data")
    top = scratch / sdist.name.removesuffix(".tar.gz")
    project = tomllib.loads((top / "pyproject.toml").read_text())["project"]
    return top, list(project.get("optional-dependencies", {}).get("dev", []))


def make_venv(path: Path, packages: list[str]) -> Path:
    """A venv at `path` with `packages` (requirement strings or `-e PATH`); its python."""
    run(["uv", "venv", "--quiet", "--python", sys.executable, str(path)])
    python = path / "bin" / "python"
    run(["uv", "pip", "install", "--quiet", "--python", str(python), *packages])
    return python


def pytest_run(python: Path, top: Path, junit: Path, extra: list[str]) -> str:
    """Run the suite under `top` with `python` (a file that cannot be collected does not stop
    the others); pytest's output."""
    cmd = [str(python), "-m", "pytest", "tests", "-p", "no:cacheprovider", "-q", *extra]
    cmd += ["--continue-on-collection-errors", f"--junitxml={junit}", "-o", "junit_family=xunit2"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run(cmd, cwd=top, capture_output=True, text=True, env=env, timeout=1800)
    return done.stdout + done.stderr


def junit_outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """node id -> (outcome, first line of the failure) from a junit xml file."""
    outcomes: dict[str, tuple[str, str]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "")
        if not module:  # a file that could not be collected: its tests are counted elsewhere
            continue
        parts = module.split(".")
        # classname is tests.test_x[.Class]; the file is the first two parts
        file = "/".join(parts[:2]) + ".py"
        node = "::".join([file, *parts[2:], case.get("name", "")])
        result, reason = "passed", ""
        for tag in ("failure", "error", "skipped"):
            child = case.find(tag)
            if child is not None:
                result = {"failure": "failed", "error": "failed", "skipped": "skipped"}[tag]
                reason = (child.get("message") or child.text or "").strip().splitlines()[:1]
                reason = reason[0] if reason else ""
                break
        outcomes[node] = (result, reason)
    return outcomes


def import_errors(output: str) -> dict[str, str]:
    """test file -> the missing name that stopped its collection, from pytest's output."""
    errors: dict[str, str] = {}
    current = None
    for line in output.splitlines():
        head = re.match(r"_+ ERROR collecting (\S+) _+", line)
        if head:
            current = head.group(1)
            continue
        if current and current not in errors:
            missing = re.search(r"No module named '([^']+)'|cannot import name '([^']+)'", line)
            if missing:
                errors[current] = missing.group(1) or missing.group(2)
    return errors


def uses_private(path: Path) -> bool:
    """Whether a test file imports a private name or module of the product's package."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE):
            if any(p.startswith("_") for p in (node.module or "").split(".")):
                return True
            if any(a.name.startswith("_") for a in node.names):
                return True
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == PACKAGE and any(p.startswith("_") for p in parts):
                    return True
    return False


def category(reason: str) -> str:
    """A short failure category: the exception's type and the start of its message."""
    reason = re.sub(r"0x[0-9a-f]+|\b\d+(\.\d+)?\b", "N", reason)
    return reason[:90] or "(no message)"


def tally(top: Path, reference: list[str], ours: dict[str, tuple[str, str]], output: str) -> dict:
    """Counts per file and overall, and the failure categories."""
    missing_by_file = import_errors(output)
    files: dict[str, Counter[str]] = {}
    reasons: Counter[str] = Counter()
    for node in reference:
        file = node.split("::")[0]
        counts = files.setdefault(file, Counter())
        counts["tests"] += 1
        result, reason = ours.get(node, ("", ""))
        if not result:
            result = "cannot import"
            reason = f"cannot import {missing_by_file.get(file, '?')}"
        counts[result] += 1
        if result in ("failed", "cannot import"):
            reasons[category(reason)] += 1
    table = []
    for file, counts in sorted(files.items()):
        table.append(
            {
                "file": file,
                "private": uses_private(top / file),
                "tests": counts["tests"],
                "passed": counts["passed"],
                "failed": counts["failed"],
                "skipped": counts["skipped"],
                "cannot_import": counts["cannot import"],
                "missing": missing_by_file.get(file, ""),
            }
        )
    public = [row for row in table if not row["private"]]
    total = {
        key: sum(row[key] for row in table)
        for key in ("tests", "passed", "failed", "skipped", "cannot_import")
    }
    public_tests = sum(row["tests"] for row in public)
    public_passed = sum(row["passed"] for row in public)
    return {
        "sdist": f"{SDIST_NAME}=={SDIST_VERSION}",
        "files": table,
        "total": total,
        "public": {
            "tests": public_tests,
            "passed": public_passed,
            "rate": round(public_passed / public_tests, 4) if public_tests else 0.0,
        },
        "private": {
            "tests": sum(row["tests"] for row in table if row["private"]),
            "passed": sum(row["passed"] for row in table if row["private"]),
        },
        "categories": reasons.most_common(),
    }


def show(report: dict, reference_passed: int) -> None:
    """The report as a table people read."""
    print(f"{'file':42} {'tests':>5} {'pass':>5} {'fail':>5} {'skip':>5} {'noimp':>5}  missing")
    for row in report["files"]:
        mark = " (private)" if row["private"] else ""
        print(
            f"{row['file'] + mark:42} {row['tests']:5} {row['passed']:5} {row['failed']:5} "
            f"{row['skipped']:5} {row['cannot_import']:5}  {row['missing']}"
        )
    t, pub, priv = report["total"], report["public"], report["private"]
    print(
        f"\ntotal: {t['tests']} tests ({reference_passed} pass on the existing product itself); "
        f"ours: {t['passed']} passed, {t['failed']} failed, {t['skipped']} skipped, "
        f"{t['cannot_import']} cannot import"
    )
    print(
        f"public names only: {pub['passed']} of {pub['tests']} pass ({pub['rate']:.1%}); "
        f"files using private helpers: {priv['passed']} of {priv['tests']} pass"
    )
    print("\nfailures by category (count, first line):")
    for reason, count in report["categories"][:40]:
        print(f"{count:5}  {reason}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    parser.add_argument("--cache", type=Path, default=default_cache / "agentenv" / "compat")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("-k", dest="select", help="pytest -k expression (a subset)")
    args = parser.parse_args(argv)
    extra = ["-k", args.select] if args.select else []
    scratch = Path(tempfile.mkdtemp(prefix="agentenv-compat-"))
    try:
        sdist = fetch_sdist(args.cache)
        top, dev = unpack(sdist, scratch)
        print(f"[compat] {sdist.name} unpacked in {scratch}", file=sys.stderr)
        ref_python = make_venv(scratch / "ref", [f"{top}[dev]"])
        pytest_run(ref_python, top, scratch / "ref.xml", extra)
        outcomes = junit_outcomes(scratch / "ref.xml")
        reference = list(outcomes)
        ref_passed = sum(result == "passed" for result, _ in outcomes.values())
        print(f"[compat] existing product: {ref_passed} of {len(reference)} pass", file=sys.stderr)
        editable = [arg for path in OURS for arg in ("-e", our_requirement(path))]
        own_dev = [req for req in dev if not req.startswith(SDIST_NAME)]
        our_python = make_venv(scratch / "ours", [*editable, *own_dev])
        output = pytest_run(our_python, top, scratch / "ours.xml", extra)
        junit = scratch / "ours.xml"
        ours = junit_outcomes(junit) if junit.exists() else {}
        report = tally(top, reference, ours, output)
        report["reference_passed"] = ref_passed
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            show(report, ref_passed)
        return 0
    except (SetupError, subprocess.TimeoutExpired) as exc:
        print(f"compat-suite: {exc}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
