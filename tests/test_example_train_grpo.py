"""examples/train-grpo without torch: its bundle served by our OpenEnv app, its own rollout code
(episodes.py, openenv's client) playing lines whose rewards come from the task's verifiers, and
train.py saying what it needs when TRL's stack is missing (CI never installs torch)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "train-grpo"
TOKEN = "grpo-t0ken"


def _episodes() -> Any:
    spec = importlib.util.spec_from_file_location("train_grpo_episodes", EXAMPLE / "episodes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The example's bundle served by `build_app` on a loopback port with a token (read by
    episodes.py from the variable the server's CLI reads), state in a scratch home."""
    from agent_env.openenv import build_app
    from agentenv_protocol.serving import serve_in_thread

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AGENT_ENV_HOME", str(tmp_path_factory.mktemp("grpo-home")))
        mp.delenv("AGENT_ENV_CONFIG", raising=False)
        mp.setenv("AGENT_ENV_OPENENV_TOKEN", TOKEN)
        app = build_app(EXAMPLE / "scratchpad", token=TOKEN)
        server = serve_in_thread(app, startup_timeout=60)
        try:
            yield server.url
        finally:
            server.stop(timeout=60)


@pytest.mark.timeout(300)
def test_the_examples_episodes_are_rewarded_by_the_tasks_verifiers(served: str) -> None:
    episodes = _episodes()
    env_name, tasks = episodes.served_tasks(served)
    assert env_name == "scratchpad"
    assert [t["name"] for t in tasks] == ["write-a-line"]
    lines = ["notes on the scratchpad", "my notes", "ok so go"]
    with ThreadPoolExecutor(max_workers=len(lines)) as pool:  # a GRPO group: parallel sessions
        played = list(pool.map(lambda line: episodes.play(served, "write-a-line", line), lines))
    rewards = [reward for reward, _ in played]
    scores = [meta.get("scores") for _, meta in played]
    assert rewards == [1.0, 0.5, 0.0], [meta for _, meta in played]
    assert scores == [
        {"pad": 1.0, "answer": 1.0},
        {"pad": 1.0, "answer": 0.0},
        {"pad": 0.0, "answer": 0.0},
    ]
    assert [meta["status"] for _, meta in played] == ["passed", "scored_below", "scored_below"]


def test_train_py_says_what_it_needs_without_torch() -> None:
    assert importlib.util.find_spec("torch") is None, "the project's venv never has torch"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "train.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "train.py needs torch, transformers, trl, datasets and openenv" in done.stderr
    assert "see README.md" in done.stderr
