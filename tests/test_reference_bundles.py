"""Issue 14's done criterion: the existing product's example bundles (`hello`, `echo-mcp`,
`mail-mcp` from the `agentenv-framework==0.9.1364` wheel, downloaded from PyPI into a cache at
test time) run with our CLI, changing only a `FROM` line that names a registry this machine
cannot reach (to our locally built base image). They must pass on docker and on local (where
an env that has only a Dockerfile runs in local Docker); their `verify.py` runs unchanged.

A run that fails at a blocker another workstream is fixing raises `Blocked`, and only the
parameters marked with that blocker xfail on it (strictly: once the fix is merged they pass
and the mark must go). Any other failure is a real one.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import agent_env  # noqa: E402

REFERENCE = "agentenv-framework==0.9.1364"
WHEEL = "agentenv_framework-0.9.1364-py3-none-any.whl"
EXAMPLES = "agent_env/examples/"
#: What each bundle's passing run prints (its summary line).
PASSED = {
    "hello": "hello  passed (hello: 1)",
    "echo-mcp": "smoke  passed (echoes: 1)",
    "mail-mcp": "smoke  passed (finds-the-invoice: 1)",
}
#: blocker -> (the workstream fixing it, what its failure prints)
BLOCKERS = {
    "mcp1": (
        "mcp 1.x as the locked default (workstream mcp1): the unchanged verify.py unpacks "
        "streamable_http_client as (read, write, _) and reads result.isError",
        ("not enough values to unpack (expected 3, got 2)", "has no attribute 'isError'"),
    ),
    "validate": (
        "aliases.toml [envs]/[agents] tables (workstream validate)",
        ("aliases.toml: envs: expected the name of a task or eval",),
    ),
}


class Blocked(Exception):
    """The run failed at a blocker another workstream is fixing."""


def blocked_by(*names: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(
        strict=True, raises=Blocked, reason="; ".join(BLOCKERS[n][0] for n in names)
    )


def case(name: str, sandbox: str, *blockers: str) -> object:
    marks = [blocked_by(*blockers)] if blockers else []
    return pytest.param(name, sandbox, blockers, id=f"{name}-{sandbox}", marks=marks)


CASES = [
    case("hello", "local"),
    case("hello", "docker"),
    case("echo-mcp", "docker", "mcp1"),
    case("echo-mcp", "local", "mcp1"),
    case("mail-mcp", "docker", "validate", "mcp1"),
    case("mail-mcp", "local", "validate", "mcp1"),
]


def _pip() -> list[str]:
    """An ordinary pip client: this interpreter's, else uv's tool runner, else one on PATH."""
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    if shutil.which("uv"):
        return ["uv", "tool", "run", "pip"]
    if shutil.which("pip"):
        return ["pip"]
    pytest.fail("no pip client (python -m pip, uv or pip) to download the reference wheel")


@pytest.fixture(scope="session")
def reference_wheel(request: pytest.FixtureRequest) -> Path:
    """The reference wheel, downloaded once into the test cache."""
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        folder = Path(cache.mkdir("reference-wheels"))
    else:  # -p no:cacheprovider
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        folder = Path(base) / "agentenv-tests" / "reference-wheels"
        folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / WHEEL
    if not wheel.is_file():
        done = subprocess.run(
            [*_pip(), "download", "--no-deps", "--only-binary", ":all:", "-d", str(folder)]
            + [REFERENCE],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0 and wheel.is_file(), done.stdout + done.stderr
    return wheel


@pytest.fixture(scope="session")
def base_image() -> str:
    from agentenv_docker_sandbox.testing import BASE_IMAGE, require_docker

    require_docker(BASE_IMAGE)
    return BASE_IMAGE


def copy_bundle(wheel: Path, name: str, dest: Path, base_image: str) -> Path:
    """`name`'s folder out of the wheel (no caches), each Dockerfile's `FROM` pointed at
    `base_image` and nothing else changed."""
    prefix = f"{EXAMPLES}{name}/"
    with zipfile.ZipFile(wheel) as archive:
        members = [
            m
            for m in archive.namelist()
            if m.startswith(prefix) and not m.endswith("/") and "__pycache__" not in m
        ]
        assert members, f"{wheel.name} has no {prefix}"
        for member in members:
            target = dest / member[len(prefix) :]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(member))
    for dockerfile in dest.glob("envs/*/Dockerfile"):
        text = dockerfile.read_text()
        new = re.sub(r"(?m)^FROM \S+", f"FROM {base_image}", text, count=1)
        assert new != text and new.splitlines()[1:] == text.splitlines()[1:]
        dockerfile.write_text(new)
    return dest


def unchanged_verifiers(wheel: Path, name: str, bundle: Path) -> list[str]:
    """The bundle's verify.py files, checked to be byte-identical to the wheel's."""
    found = []
    with zipfile.ZipFile(wheel) as archive:
        for path in sorted(bundle.rglob("verify.py")):
            rel = path.relative_to(bundle).as_posix()
            assert path.read_bytes() == archive.read(f"{EXAMPLES}{name}/{rel}")
            found.append(rel)
    return found


def check(done: subprocess.CompletedProcess, name: str, blockers: tuple[str, ...]) -> None:
    out = done.stdout + done.stderr
    if done.returncode == 0 and PASSED[name] in done.stdout:
        return
    for blocker in blockers:
        if any(sign in out for sign in BLOCKERS[blocker][1]):
            raise Blocked(f"{blocker}: {out[-2000:]}")
    pytest.fail(f"{name} did not pass (exit {done.returncode}):\n{out[-4000:]}")


@pytest.mark.parametrize(("name", "sandbox", "blockers"), CASES)
def test_reference_bundle_passes_with_our_cli(
    name, sandbox, blockers, reference_wheel, request, tmp_path
):
    needs_docker = sandbox == "docker" or name != "hello"
    image = request.getfixturevalue("base_image") if needs_docker else "unused"
    bundle = copy_bundle(reference_wheel, name, tmp_path / name, image)
    verifiers = unchanged_verifiers(reference_wheel, name, bundle)
    assert bool(verifiers) == (name != "hello")
    home = tmp_path / "home"
    home.mkdir()
    done = agent_env(home, "run", str(bundle), "--sandbox", sandbox, timeout=900)
    if name != "hello" and sandbox == "local" and "validate" not in blockers:
        # the env has only a Dockerfile: `local` (this machine) runs it in local Docker
        assert "deploys on docker: local cannot host it" in done.stderr, done.stderr
    check(done, name, blockers)
    leases = home / "leases"
    assert not leases.exists() or not [p for p in leases.iterdir() if p.suffix == ".json"]
