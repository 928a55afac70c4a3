"""A served notes-agent (examples/notes-agent) on a loopback port, shared by the module's tests,
with its state in a temporary AGENT_ENV_HOME."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
NOTES = ROOT / "examples" / "notes-agent"


@pytest.fixture(scope="module")
def openenv_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("openenv-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AGENT_ENV_HOME", str(home))
        mp.delenv("AGENT_ENV_CONFIG", raising=False)
        yield home


@pytest.fixture(scope="module")
def notes_server(openenv_home: Path) -> Iterator[Any]:
    """(url, app) of `build_app(examples/notes-agent)` served by uvicorn in a thread."""
    from agent_env.openenv import build_app
    from agentenv_protocol.serving import serve_in_thread

    app = build_app(NOTES)
    server = serve_in_thread(app, startup_timeout=60)
    try:
        yield server.url, app
    finally:
        server.stop(timeout=60)
