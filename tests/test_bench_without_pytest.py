"""The benchmarks run where pytest is not installed (issue 31): each bench script imports with
pytest blocked, as a python whose path has no pytest would; and the docker sandbox bench runs
end to end that way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
# Make `import pytest` fail the way it does where pytest is not installed, then load the
# script as its own `python bench/X.py` would (bench/ first on the path), without running main.
WITHOUT_PYTEST = """
import importlib.util, runpy, sys
sys.modules["pytest"] = None
sys.modules["_pytest"] = None
path = sys.argv[1]
sys.path.insert(0, str(__import__("pathlib").Path(path).parent))
if len(sys.argv) > 2:
    sys.argv = [path, *sys.argv[2:]]
    runpy.run_path(path, run_name="__main__")
else:
    spec = importlib.util.spec_from_file_location("bench_script", path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
"""


def without_pytest(script: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_PYTEST, str(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"},
    )


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("[!_]*.py")))
def test_each_bench_script_imports_without_pytest(script: str) -> None:
    done = without_pytest(BENCH / script)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.fixture
def docker_client():
    from agentenv_docker_sandbox.testing import BASE_IMAGE, require_docker

    require_docker(BASE_IMAGE)
    import docker

    client = docker.from_env(timeout=120)
    yield client
    client.close()


@pytest.mark.timeout(300)
def test_the_docker_sandbox_bench_runs_without_pytest(docker_client) -> None:
    from agentenv_docker_sandbox.testing import BASE_IMAGE

    done = without_pytest(
        BENCH / "docker_sandbox.py", "--runs", "1", "--image", BASE_IMAGE, timeout=280
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "provider, server in image" in done.stdout and "x floor" in done.stdout, done.stdout
