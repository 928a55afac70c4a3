"""One change to an environment as a transaction: under the environment lock, snapshot the
distributions and the installer's state files, run the installer, and restore the snapshot
if it is interrupted or the caller finds a problem. `plugin add` and `plugin remove` share it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from agentenv_plugin_lifecycle.environment import Environment
from agentenv_plugin_lifecycle.lock import environment_lock
from agentenv_plugin_lifecycle.rollback import restore, run_command
from agentenv_plugin_lifecycle.snapshot import Snapshot, take


@attrs.define
class Transaction:
    """The state before the change, and how to run the installer or go back to that state."""

    env: Environment
    before: Snapshot
    saved: dict[Path, bytes]
    echo: Callable[[str], None]
    find_links: tuple[str, ...] = ()

    def run(
        self, command: tuple[str, ...] | list[str]
    ) -> tuple[subprocess.CompletedProcess, Snapshot]:
        """Run the installer and snapshot the result; restore first if anything interrupts it."""
        try:
            done = run_command(list(command), self.echo)
            after = take(self.env.python)
        except BaseException:
            self.echo("interrupted: restoring the previous distributions")
            self.rollback()
            raise
        return done, after

    def changed(self, after: Snapshot) -> bool:
        """Whether the distributions or the installer's state files differ from before."""
        return after.dists != self.before.dists or any(
            p.read_bytes() != b for p, b in self.saved.items()
        )

    def rollback(self) -> None:
        restore(self.env, self.before, self.saved, self.echo, find_links=self.find_links)


def installer_problems(done: subprocess.CompletedProcess) -> list[str]:
    """The installer's failure as one problem line (its output's tail), or none."""
    if done.returncode == 0:
        return []
    return [
        f"the installer failed (exit {done.returncode}):\n"
        f"{(done.stderr or done.stdout).strip()[-2000:]}"
    ]


@contextmanager
def transaction(
    plan: Any, *, echo: Callable[[str], None], lock_timeout: float
) -> Iterator[Transaction]:
    """Hold `plan.env`'s lock and yield its `Transaction` (reinstalls use `plan.find_links`)."""
    env = plan.env
    with environment_lock(env.prefix, timeout=lock_timeout, waiting=echo):
        yield Transaction(
            env=env,
            before=take(env.python),
            saved={p: p.read_bytes() for p in env.state_files if p.exists()},
            echo=echo,
            find_links=tuple(getattr(plan, "find_links", ())),
        )
