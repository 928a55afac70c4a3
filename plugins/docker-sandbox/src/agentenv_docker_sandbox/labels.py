"""The labels every container and network we create carries, so the next command (or
`agent-env sandbox prune`) can find what a dead process left behind without any lease."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from agent_env.sandboxes import leases, procs

PREFIX = "io.agentenv."
MANAGED = PREFIX + "managed"
SANDBOX = PREFIX + "sandbox"
RUN = PREFIX + "run"
TASK_INSTANCE = PREFIX + "task_instance"
OWNER = PREFIX + "owner"
LEASE = PREFIX + "lease"
NAME = PREFIX + "name"
NETWORK = PREFIX + "network"
USER = PREFIX + "label."

_OWNER_KEYS = {"owner_pid", "owner_host", "owner_start_time"}


def owner_value(labels: Mapping[str, str]) -> str:
    """`pid:start_time@host` from the engine's owner labels, else this process."""
    owner = procs.ProcessIdentity.from_labels(labels) or procs.ProcessIdentity.current()
    return owner.to_label_value()


def owner_alive(value: str | None) -> bool:
    """Whether the owner named by an `io.agentenv.owner` label still runs (another host's
    owner counts as alive: not ours to judge)."""
    owner = procs.ProcessIdentity.from_label_value(value)
    return owner is not None and owner.alive()


def lease_alive(path: str | None) -> bool:
    """A lease file that exists and names a live owner (e.g. a process that adopted the
    sandbox after its creator died)."""
    if not path:
        return False
    lease = leases.read(Path(path))
    return lease is not None and leases.owner_alive(lease)


def container_labels(sandbox_id: str, spec_labels: Mapping[str, str], lease: str) -> dict[str, str]:
    labels = {
        MANAGED: "docker",
        SANDBOX: sandbox_id,
        RUN: str(spec_labels.get("run_id") or ""),
        TASK_INSTANCE: str(spec_labels.get("task_instance_id") or ""),
        OWNER: owner_value(spec_labels),
        LEASE: lease,
        NAME: str(spec_labels.get("sandbox_name") or ""),
    }
    for key, value in spec_labels.items():
        if key not in _OWNER_KEYS:
            labels[USER + key] = str(value)
    return labels
