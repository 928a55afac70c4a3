"""`build_app(bundle, sandbox=...)` (the existing SDK's signature): every episode deploys on
the given provider, as `agent-env run --sandbox` does; the bundle's files stay as written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_env.errors import PluginError, SandboxError

ROOT = Path(__file__).resolve().parents[3]
NOTES = ROOT / "examples" / "notes-agent"
AGENT_ENV = str(Path(sys.executable).parent / "agent-env")


@pytest.fixture
def on_docker(tmp_path: Path) -> Path:
    """The notes-agent bundle with its env step pinned to docker."""
    folder = tmp_path / "notes-docker"
    shutil.copytree(NOTES, folder, ignore=shutil.ignore_patterns("__pycache__"))
    path = folder / "tasks" / "groceries.json"
    steps = json.loads(path.read_text())
    steps[0]["sandbox_type"] = "docker"
    path.write_text(json.dumps(steps))
    return folder


def _providers(app) -> dict[str, object]:
    [served] = app.state.agentenv_runtime.served.splits["all"]
    return {s.id: getattr(s, "sandbox_type", "-") for s in served.task.steps}


def test_sandbox_replaces_the_provider_of_every_step_that_chooses_one(openenv_home, on_docker):
    from agent_env.openenv import build_app

    assert _providers(build_app(on_docker))["env"] == "docker"
    chosen = _providers(build_app(on_docker, sandbox="local"))
    assert chosen["env"] == "local" and chosen["agent"] == "local"
    assert chosen["state"] == "-"  # a verifier chooses no sandbox
    # the bundle's file is unchanged
    steps = json.loads((on_docker / "tasks" / "groceries.json").read_text())
    assert steps[0]["sandbox_type"] == "docker"


def test_a_chain_is_taken_and_a_bad_name_is_refused_before_serving(openenv_home, on_docker):
    from agent_env.openenv import build_app

    assert _providers(build_app(on_docker, sandbox="local,docker"))["env"] == "local,docker"
    with pytest.raises(PluginError, match=r"lcoal.*did you mean 'local'"):
        build_app(on_docker, sandbox="lcoal")
    with pytest.raises(SandboxError, match="fallback chain"):
        build_app(on_docker, sandbox="local,")


def test_serve_takes_sandbox(openenv_home, on_docker):
    done = subprocess.run(
        [AGENT_ENV, "openenv", "serve", str(on_docker), "--sandbox", "nowhere"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "nowhere" in done.stderr and "local" in done.stderr
