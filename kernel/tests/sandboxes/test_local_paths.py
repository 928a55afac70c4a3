"""The local sandbox's `/app` mapping as pure functions (no sandbox, no processes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_env.errors import SandboxError
from agent_env.sandboxes.local.paths import host_path, rewrite

FOLDER = Path("/work/box")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/app", FOLDER),
        ("/app/", FOLDER),
        ("/app/a/b.txt", FOLDER / "a" / "b.txt"),
        ("a/b.txt", FOLDER / "a" / "b.txt"),
        ("a/../b.txt", FOLDER / "a" / ".." / "b.txt"),  # stays inside: allowed
        ("", FOLDER),
    ],
)
def test_sandbox_paths_map_into_the_work_folder(path, expected):
    assert host_path(FOLDER, "local-1", path) == expected


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/etc/passwd", "local sandbox local-1: '/etc/passwd' is outside /app"),
        ("/application/x", "'/application/x' is outside /app"),
        ("/", "'/' is outside /app"),
        ("/app/../etc", "local sandbox local-1: '/app/../etc' escapes /app"),
        ("../x", "'../x' escapes /app"),
        ("a/../../x", "'a/../../x' escapes /app"),
    ],
)
def test_paths_outside_app_name_the_sandbox_and_the_path(path, why):
    with pytest.raises(SandboxError, match=why.replace(".", r"\.")):
        host_path(FOLDER, "local-1", path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cd /app && ls /app/x", "cd /work/box && ls /work/box/x"),
        ('cat "/app/a b"', 'cat "/work/box/a b"'),
        ("DIR=/app", "DIR=/work/box"),
        ("/application /apps /app.py", "/application /apps /app.py"),
        ("~/app $HOME/app ${X}/app ./app x/app", "~/app $HOME/app ${X}/app ./app x/app"),
    ],
)
def test_only_standalone_app_is_rewritten(text, expected):
    assert rewrite(FOLDER, text) == expected
