"""A snapshot of an environment (distributions, their `agent_env` entry points and
requirements, every plugin's status) taken by a fresh interpreter running `probe.py`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import attrs

from agent_env.errors import PluginError

_PROBE = (Path(__file__).with_name("probe.py")).read_text(encoding="utf-8")


@attrs.frozen(kw_only=True)
class Snapshot:
    dists: dict[str, str]
    entry_points: dict[str, list[str]]
    requires: dict[str, list[str]]
    requested: list[str] = attrs.field(factory=list)
    plugins: list[dict[str, Any]] = attrs.field(factory=list)
    registry_problems: dict[str, str] = attrs.field(factory=dict)
    kernel_error: str | None = None

    def plugin_status(self) -> dict[str, tuple[str | None, str, list[str]]]:
        """Plugin name -> (distribution, status, errors)."""
        return {p["name"]: (p.get("dist"), p["status"], p.get("errors", [])) for p in self.plugins}


def take(python: Path, cwd: Path | None = None) -> Snapshot:
    """Snapshot the environment of `python` (a new process: nothing cached from this one)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSTARTUP",)}
    try:
        done = subprocess.run(
            [str(python), "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            cwd=cwd,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PluginError(f"could not inspect the environment of {python}: {exc}") from None
    try:
        data = json.loads(done.stdout)
    except ValueError:
        raise PluginError(
            f"could not inspect the environment of {python}: {done.stderr.strip()[-500:]}"
        ) from None
    return Snapshot(
        dists=data["dists"],
        entry_points=data["entry_points"],
        requires=data["requires"],
        requested=data.get("requested", []),
        plugins=data.get("plugins", []),
        registry_problems=data.get("registry_problems", {}),
        kernel_error=data.get("kernel_error"),
    )


def changes(before: dict[str, str], after: dict[str, str]) -> dict[str, list[str]]:
    """`added` / `removed` / `changed` lines (`name==version`, `name old -> new`)."""
    return {
        "added": [f"{n}=={after[n]}" for n in sorted(after.keys() - before.keys())],
        "removed": [f"{n}=={before[n]}" for n in sorted(before.keys() - after.keys())],
        "changed": [
            f"{n} {before[n]} -> {after[n]}"
            for n in sorted(before.keys() & after.keys())
            if before[n] != after[n]
        ],
    }
