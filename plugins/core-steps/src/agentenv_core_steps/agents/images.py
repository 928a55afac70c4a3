"""Build contexts for agent images: the agent folder plus, under `agentenv-wheels/`, the
protocol wheel built from the installed package (our names are not on the public index). An
agent Dockerfile installs it with `RUN pip install /tmp/agentenv-wheels/*.whl` after
`COPY agentenv-wheels/ /tmp/agentenv-wheels/`. Contexts are cached by folder and wheel."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from agentenv_core_steps.envs.mcp_server import WHEELS_DIR


def build_context(folder: Path, out: Path) -> Path:
    """A folder under `out` to build `folder`'s Dockerfile in (reused when nothing changed)."""
    from agentenv_core_steps.envs.wheels import protocol_wheel

    wheel = protocol_wheel(out / "wheels")
    context = out / "agent-contexts" / f"{folder.name}-{wheel.parent.name}"
    if (context / "Dockerfile").is_file():
        return context
    staging = context.with_name(context.name + f".{time.time_ns()}")
    shutil.copytree(folder, staging, ignore=shutil.ignore_patterns("__pycache__"))
    (staging / WHEELS_DIR).mkdir(exist_ok=True)
    shutil.copy2(wheel, staging / WHEELS_DIR / wheel.name)
    try:
        staging.rename(context)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    return context
