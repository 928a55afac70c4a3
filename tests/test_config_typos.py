"""A typo in a provider's config section fails before anything runs, naming the file, the
section and the key with a did-you-mean (`[sandbox.docker] netwrk`, `[sandbox.local] rooot`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def agent_env(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("agent-env")
    return subprocess.run(
        [str(exe), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=project,
        env={**os.environ, "AGENT_ENV_HOME": str(project / "home")},
    )


def project_with(tmp_path: Path, config: str) -> Path:
    (tmp_path / ".agentenv").mkdir()
    (tmp_path / ".agentenv" / "config.toml").write_text(config)
    return tmp_path


@pytest.mark.parametrize(
    "config, args, expected",
    [
        (
            '[sandbox.docker]\nnetwrk = "bridge"\n',
            ("run", "hello", "--sandbox", "docker"),
            "[sandbox.docker] has unknown key 'netwrk' (did you mean 'network'?)",
        ),
        (
            '[sandbox.local]\nrooot = "x"\n',
            ("config", "show"),
            "[sandbox.local] has unknown key 'rooot' (did you mean 'root'?)",
        ),
    ],
)
def test_provider_setting_typo_fails_before_the_run(tmp_path, config, args, expected):
    project = project_with(tmp_path, config)
    result = agent_env(project, *args)
    assert result.returncode == 1, result.stdout
    assert str(project / ".agentenv" / "config.toml") in result.stderr
    assert expected in result.stderr
    assert not (project / "home" / "documents.sqlite3").exists()  # nothing ran


def test_correct_provider_settings_are_accepted(tmp_path):
    project = project_with(
        tmp_path, f'[sandbox.docker]\napi_timeout = 60\n[sandbox.local]\nroot = "{tmp_path}/sb"\n'
    )
    result = agent_env(project, "run", "hello")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "sb").is_dir()
