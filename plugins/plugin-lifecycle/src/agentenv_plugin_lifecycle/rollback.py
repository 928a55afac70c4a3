"""Put an environment back to an exact set of distributions: restore the installer's own files,
let it resync, then uninstall what was added and reinstall `name==version` for what changed."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from agent_env.errors import PluginError
from agentenv_plugin_lifecycle import installers
from agentenv_plugin_lifecycle.environment import Environment
from agentenv_plugin_lifecycle.snapshot import Snapshot, changes, take
from agentenv_plugin_lifecycle.specs import OWN_DISTRIBUTIONS


def run_command(cmd: list[str], echo: Callable[[str], None]) -> subprocess.CompletedProcess:
    """Run an installer command, saying which; its output is kept for error messages."""
    echo(f"$ {installers.shell(cmd)}")
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(cmd, 127, "", str(exc))


def restore(
    env: Environment,
    before: Snapshot,
    saved: dict[Path, bytes],
    echo: Callable[[str], None],
    *,
    find_links: tuple[str, ...] = (),
) -> None:
    """Make `env` hold exactly `before.dists` again, or fail with the commands still to run.

    agent-env's own distributions are only reinstalled from `find_links` (never an index: their
    names belong to another project there)."""
    for path, data in saved.items():
        path.write_bytes(data)
    resync = installers.resync_command(env)
    if resync is not None:
        run_command(resync, echo)
    now = take(env.python)
    added = sorted(now.dists.keys() - before.dists.keys())
    if added:
        run_command(installers.low_uninstall(env, added), echo)
    pins = [f"{n}=={v}" for n, v in sorted(before.dists.items()) if now.dists.get(n) != v]
    own = [p for p in pins if p.split("==")[0] in OWN_DISTRIBUTIONS]
    other = [p for p in pins if p not in own]
    index = installers.index_args(find_links, False)
    if other:
        run_command(installers.low_install(env, other, index), echo)
    if own:
        run_command(installers.low_install(env, own, installers.index_args(find_links, True)), echo)
    final = take(env.python)
    if final.dists != before.dists:
        left = changes(before.dists, final.dists)
        fix = [f"{key}: {', '.join(items)}" for key, items in left.items() if items]
        raise PluginError(
            "rolling back left the environment different from before ("
            + "; ".join(fix)
            + "); restore it with: "
            + installers.shell(
                installers.low_install(
                    env, [f"{n}=={v}" for n, v in sorted(before.dists.items())], index
                )
            )
        )
