"""Issue 14's done criterion: the existing product's example bundles (`hello`, `echo-mcp`,
`mail-mcp` from the `agentenv-framework==0.9.1364` wheel, downloaded from PyPI into a cache at
test time) run with our CLI, changing only a `FROM` line that names a registry this machine
cannot reach (to our locally built base image). They must pass on docker and on local (where
an env that has only a Dockerfile runs in local Docker); their `verify.py` runs unchanged.
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
CASES = [
    pytest.param(name, sandbox, id=f"{name}-{sandbox}")
    for name in ("hello", "echo-mcp", "mail-mcp")
    for sandbox in ("local", "docker")
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


def copy_bundle(
    wheel: Path, name: str, dest: Path, base_image: str, *, folder: str = EXAMPLES
) -> Path:
    """`name`'s folder (under `folder` of the wheel: its examples, or `agent_env/` for a bundle
    such as `drivers`) out of the wheel (no caches), each Dockerfile's `FROM` pointed at
    `base_image` and nothing else changed."""
    prefix = f"{folder}{name}/"
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


def check(done: subprocess.CompletedProcess, name: str) -> None:
    if done.returncode == 0 and PASSED[name] in done.stdout:
        return
    out = done.stdout + done.stderr
    pytest.fail(f"{name} did not pass (exit {done.returncode}):\n{out[-4000:]}")


@pytest.mark.parametrize(("name", "sandbox"), CASES)
def test_reference_bundle_passes_with_our_cli(name, sandbox, reference_wheel, request, tmp_path):
    needs_docker = sandbox == "docker" or name != "hello"
    image = request.getfixturevalue("base_image") if needs_docker else "unused"
    bundle = copy_bundle(reference_wheel, name, tmp_path / name, image)
    verifiers = unchanged_verifiers(reference_wheel, name, bundle)
    assert bool(verifiers) == (name != "hello")
    home = tmp_path / "home"
    home.mkdir()
    done = agent_env(home, "run", str(bundle), "--sandbox", sandbox, timeout=900)
    if name != "hello" and sandbox == "local":
        # the env has only a Dockerfile: `local` (this machine) runs it in local Docker
        assert "deploys on docker: local cannot host it" in done.stderr, done.stderr
    check(done, name)
    leases = home / "leases"
    assert not leases.exists() or not [p for p in leases.iterdir() if p.suffix == ".json"]
