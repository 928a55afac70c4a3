"""`agent_env.paths.home()` without `AGENT_ENV_HOME` is platformdirs' user state dir; on Linux it
is computed without importing platformdirs, and must give platformdirs' answer exactly."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import json, sys
from agent_env import paths
home = str(paths.home())
imported = "platformdirs" in sys.modules
import platformdirs
print(json.dumps([home, platformdirs.user_state_dir("agent-env", appauthor=False), imported]))
"""


def _home_in(env: dict[str, str]) -> tuple[str, str, bool]:
    base = {k: v for k, v in os.environ.items() if k not in ("AGENT_ENV_HOME", "XDG_STATE_HOME")}
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    ours, theirs, imported = json.loads(result.stdout)
    return ours, theirs, imported


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"XDG_STATE_HOME": "/srv/state"},
        {"XDG_STATE_HOME": "/srv/state/"},
        {"XDG_STATE_HOME": "relative/state"},
        {"XDG_STATE_HOME": ""},
        {"HOME": "/h/", "XDG_STATE_HOME": ""},
        {"HOME": "/"},
    ],
    ids=["default", "xdg", "xdg-slash", "xdg-relative", "xdg-empty", "home-slash", "home-root"],
)
def test_home_is_platformdirs_state_dir_without_importing_it(env):
    ours, theirs, imported = _home_in(env)
    assert ours == theirs
    assert imported == (sys.platform != "linux")  # the platformdirs-free path is Linux's


@pytest.mark.parametrize("home", ["relative/home", ""], ids=["relative", "empty"])
def test_a_home_it_cannot_use_is_platformdirs_decision(home):
    ours, theirs, imported = _home_in({"HOME": home})
    assert ours == theirs
    assert imported


def test_agent_env_home_wins(tmp_path):
    ours, _, imported = _home_in({"AGENT_ENV_HOME": str(tmp_path / "h")})
    assert ours == str(tmp_path / "h")
    assert not imported
