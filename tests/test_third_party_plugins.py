"""Third-party plugins installed from wheels into a fresh virtualenv, next to the kernel wheel
built from this checkout: one adds a step type and a command, one is broken on import."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from wheel_venv import run_command, venv_from_wheels  # noqa: E402

pytestmark = pytest.mark.network  # installs from the package index

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A virtualenv with the kernel, agentenv-shout and agentenv-broken wheels (no index)."""
    return venv_from_wheels(
        tmp_path_factory.mktemp("third-party"),
        (ROOT / "kernel", FIXTURES / "agentenv-shout", FIXTURES / "agentenv-broken"),
    )


@pytest.fixture
def agent_env(venv, tmp_path):
    """Run the venv's `agent-env` in an empty folder with a private home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_ENV_", "VIRTUAL_ENV"))}
    env["AGENT_ENV_HOME"] = str(tmp_path / "home")
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"

    def run(*args: str, **extra_env: str) -> subprocess.CompletedProcess:
        return run_command(
            [str(venv / "bin" / "agent-env"), *args], cwd=tmp_path, env={**env, **extra_env}
        )

    return run


BROKEN = "installed but broken: importing 'agentenv_broken.hooks' raised RuntimeError: agentenv-broken is broken on purpose"


def test_help_lists_the_plugin_command_and_warns_once_about_the_broken_one(agent_env):
    result = agent_env("--help")
    assert result.returncode == 0, result.stderr
    # click pads the names to the longest command's
    assert re.search(r"^  shout +Shout TEXT back, louder\.$", result.stdout, re.M), result.stdout
    assert result.stderr.count("plugin 'broken' failed to load") == 1
    assert BROKEN in result.stderr


def test_plugin_command_works(agent_env):
    result = agent_env("shout", "hello")
    assert (result.returncode, result.stdout) == (0, "HELLO!\n")


def test_plugin_step_type_runs_in_a_task(agent_env, tmp_path):
    bundle = tmp_path / "bundle"
    (bundle / "tasks").mkdir(parents=True)
    (bundle / "tasks" / "t.json").write_text(
        json.dumps([{"id": "s", "type": "shout", "text": "hi"}])
    )
    result = agent_env("run", str(bundle))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "shouted HI!" in result.stderr
    assert "passed" in result.stdout


def test_plugin_list_shows_ok_and_failed(agent_env):
    table = agent_env("plugin", "list")
    assert table.returncode == 0, table.stderr
    rows = {line.split()[0]: line.split() for line in table.stdout.splitlines()[1:] if line.split()}
    assert rows["shout"][1:4] == ["agentenv-shout", "0.3.0", "ok"]
    assert rows["broken"][1:4] == ["agentenv-broken", "0.1.0", "failed"]
    data = {p["name"]: p for p in json.loads(agent_env("plugin", "list", "--json").stdout)}
    assert data["shout"]["registered"] == {"step_types": ["shout"], "commands": ["shout"]}
    assert data["broken"]["status"] == "failed"
    assert data["broken"]["errors"] == [BROKEN]
    assert data["local-stores"]["status"] == "ok"


def test_plugin_check_fails_and_kill_switches_recover(agent_env):
    check = agent_env("plugin", "check")
    assert check.returncode == 1
    assert f"plugin 'broken': {BROKEN}" in check.stdout
    disabled = agent_env("--disable-plugin", "broken", "plugin", "check")
    assert disabled.returncode == 0, disabled.stdout + disabled.stderr
    assert "(1 disabled)" in disabled.stdout
    assert "failed to load" not in disabled.stderr
    env_disabled = agent_env("plugin", "check", AGENT_ENV_DISABLE_PLUGINS="agentenv-broken")
    assert env_disabled.returncode == 0, env_disabled.stdout
    no_plugins = agent_env("--no-plugins", "shout", "x")
    assert no_plugins.returncode == 2
    assert "No such command 'shout'" in no_plugins.stderr


def test_strict_mode_makes_the_broken_plugin_fatal(agent_env):
    result = agent_env("plugin", "list", AGENT_ENV_STRICT_PLUGINS="1")
    assert result.returncode == 1
    assert result.stderr.strip() == f"Error: plugin 'broken' failed to load: {BROKEN}"


def test_plugin_settings_reach_the_plugin(agent_env, tmp_path):
    (tmp_path / ".agentenv").mkdir()
    (tmp_path / ".agentenv" / "config.toml").write_text('[plugins.agentenv-shout]\nsuffix = "?!"\n')
    assert agent_env("shout", "hey").stdout == "HEY?!\n"
    (tmp_path / ".agentenv" / "config.toml").write_text('[plugins.agentenv-shout]\nsufix = "?"\n')
    bad = agent_env("shout", "hey")
    assert bad.returncode == 1
    assert "unknown key 'sufix' (did you mean 'suffix'?)" in bad.stderr
