"""The distributions as a user installs them: every workspace distribution is built as a wheel,
then installed with empty tool and cache folders (local wheels via --find-links, third-party
dependencies from the real index) and `agent-env run hello` runs: `uv tool install
agentenv-framework` (the meta-distribution provides the executable) and `uvx --from
agentenv-framework agent-env` (without uv's "not provided by package" warning)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_env.testing.require import require

pytestmark = pytest.mark.network  # installs from the package index

ROOT = Path(__file__).resolve().parents[1]


def run(cmd: list[str], env: dict[str, str], timeout: float = 400) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    uv = shutil.which("uv")
    require(None if uv else "uv is not on PATH")
    base = tmp_path_factory.mktemp("dists")
    (base / "dist").mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("UV_", "VIRTUAL_ENV"))},
        "UV_CACHE_DIR": str(base / "uvcache"),
        "UV_TOOL_DIR": str(base / "tools"),
        "UV_TOOL_BIN_DIR": str(base / "bin"),
        "AGENT_ENV_HOME": str(base / "home"),
        "UV_FIND_LINKS": str(base / "dist"),
    }
    built = run([uv, "build", "--all-packages", "--wheel", "-o", str(base / "dist"), "-q"], env)
    assert built.returncode == 0, built.stderr
    assert len(list((base / "dist").glob("*.whl"))) >= 8
    return uv, base, env


def test_uv_tool_install_of_the_meta_distribution_runs_hello(fresh):
    uv, base, env = fresh
    installed = run([uv, "tool", "install", "agentenv-framework"], env)
    if installed.returncode != 0 and "network" in installed.stderr.lower():
        require(f"the package index is unreachable: {installed.stderr[-300:]}")
    assert installed.returncode == 0, installed.stderr
    assert "Installed 1 executable: agent-env" in installed.stderr + installed.stdout
    hello = run([str(base / "bin" / "agent-env"), "run", "hello"], env)
    assert hello.returncode == 0, hello.stderr
    assert hello.stdout.startswith("hello  passed (hello: 1)")


def test_uvx_from_the_meta_distribution_runs_hello_without_a_warning(fresh):
    uv, _, env = fresh
    hello = run(
        [uv, "tool", "run", "--from", "agentenv-framework", "agent-env", "run", "hello"], env
    )
    assert hello.returncode == 0, hello.stderr
    assert "not provided by package" not in hello.stderr
    assert hello.stdout.startswith("hello  passed (hello: 1)")


@pytest.mark.parametrize(
    "form, installs",
    [
        ("pip venv", ["agentenv-framework"]),
        ("minimal kernel + core-steps", ["agentenv-kernel", "agentenv-core-steps"]),
    ],
)
def test_pip_venv_installs_run_hello(fresh, form, installs):
    uv, base, env = fresh
    venv = base / form.replace(" ", "-").replace("+", "")
    made = run([sys.executable, "-m", "venv", str(venv)], env)
    assert made.returncode == 0, made.stderr
    pip_env = {**env, "PIP_CACHE_DIR": str(base / "pipcache"), "PIP_FIND_LINKS": str(base / "dist")}
    pip = [
        str(venv / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "-q",
        "--disable-pip-version-check",
    ]
    installed = run([*pip, *installs], pip_env)
    assert installed.returncode == 0, installed.stderr
    check = run([str(venv / "bin" / "python"), "-m", "pip", "check"], pip_env)
    assert check.returncode == 0, check.stdout
    hello = run([str(venv / "bin" / "agent-env"), "run", "hello"], env)
    assert hello.returncode == 0, hello.stderr
    assert hello.stdout.startswith("hello  passed (hello: 1)")
