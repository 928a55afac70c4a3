"""A SIGKILL inside the local provider's `create` (after its meta folder is staged as
`.local-<id>.meta.tmp`, before the rename) left that folder behind for good; `reap` removes
it once its owner is dead, and never while a live process may still be creating it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_env.sandboxes import procs
from agent_env.sandboxes.local import LocalProvider
from agent_env.sandboxes.local.provider import STAGING_GRACE_SECONDS

pytestmark = pytest.mark.anyio

#: A real writer: creates a sandbox with its owner labels and is SIGKILLed by the kernel at the
#: bad moment, the rename of the staged meta folder.
KILLED_WRITER = """
import asyncio, os, signal, sys
from pathlib import Path
from agent_env.sandbox import SandboxSpec
from agent_env.sandboxes import procs
from agent_env.sandboxes.local import LocalProvider

real_rename = os.rename
def rename(src, dst):
    if str(src).endswith(".meta.tmp"):
        os.kill(os.getpid(), signal.SIGKILL)
    return real_rename(src, dst)
os.rename = rename
labels = procs.ProcessIdentity.current().to_labels()
asyncio.run(LocalProvider({}, home=Path(sys.argv[1])).create(SandboxSpec(labels=labels)))
"""


def _staged(root: Path) -> list[str]:
    return sorted(n for n in os.listdir(root) if n.endswith(".meta.tmp"))


async def test_reap_removes_what_a_create_killed_before_its_rename_left(tmp_path):
    done = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(tmp_path)], timeout=60)
    assert done.returncode == -signal.SIGKILL
    root = tmp_path / "sandboxes"
    [leftover] = _staged(root)
    assert (root / leftover / "state.json").is_file()  # the owner labels were staged
    reaped = await LocalProvider({}, home=tmp_path).reap()
    assert reaped == [leftover[1 : -len(".meta.tmp")]]
    assert os.listdir(root) == []


async def test_a_staging_folder_of_a_live_owner_is_left_alone(tmp_path):
    """Another process between its `mkdir` and its rename: kept while it lives, also when it
    has not written its labels yet (for `STAGING_GRACE_SECONDS`)."""
    root = tmp_path / "sandboxes"
    live = root / ".local-aaaaaaaaaaaa.meta.tmp"
    live.mkdir(parents=True)
    labels = procs.ProcessIdentity.current().to_labels()
    (live / "state.json").write_text(json.dumps({"labels": labels}))
    fresh = root / ".local-bbbbbbbbbbbb.meta.tmp"
    fresh.mkdir()
    old = root / ".local-cccccccccccc.meta.tmp"
    old.mkdir()
    aged = time.time() - STAGING_GRACE_SECONDS - 5
    os.utime(old, (aged, aged))
    reaped = await LocalProvider({}, home=tmp_path).reap()
    assert reaped == ["local-cccccccccccc"]
    assert _staged(root) == [live.name, fresh.name]
