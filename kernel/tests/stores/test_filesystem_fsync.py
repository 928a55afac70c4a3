"""The object store's `fsync` modes: when a put's fsyncs run, in which order, what `close`
waits for, the back-pressure of a slow disk, and the setting's validation.

A slow disk is simulated by holding `os.fsync` at a gate: the store calls the real one once
the gate opens, so each test sees which fsyncs ran and in which order."""

from __future__ import annotations

import os
import threading
import time

import anyio
import pytest

from agent_env.errors import ConfigError
from agent_env.stores.filesystem import FSYNC_BACKLOG, FilesystemObjectStore


@pytest.fixture
def anyio_backend():
    return "asyncio"


class SlowDisk:
    """`os.fsync` held until `open()`; records the path of every descriptor fsynced."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.gate = threading.Event()
        self.synced: list[str] = []
        self.waiting = 0
        real = os.fsync

        def fsync(fd: int) -> None:
            path = os.readlink(f"/proc/self/fd/{fd}")
            self.waiting += 1
            assert self.gate.wait(30), "the test never opened the gate"
            self.waiting -= 1
            real(fd)
            self.synced.append(path)

        monkeypatch.setattr(os, "fsync", fsync)

    def open(self) -> None:
        self.gate.set()


def _puts_in_thread(store: FilesystemObjectStore, keys: list[str]) -> threading.Thread:
    """`put` each key (in order) on a thread of its own, as `put` itself runs its write."""

    def run() -> None:
        for key in keys:
            store._put(key, key.encode())

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    return worker


def test_fsync_setting_defaults_to_behind_and_keeps_its_boolean_spellings(tmp_path):
    assert FilesystemObjectStore(home=tmp_path).fsync == "behind"
    assert FilesystemObjectStore({"fsync": True}, home=tmp_path).fsync == "always"
    assert FilesystemObjectStore({"fsync": False}, home=tmp_path).fsync == "off"
    for mode in ("behind", "always", "off"):
        assert FilesystemObjectStore({"fsync": mode}, home=tmp_path).fsync == mode
    assert FilesystemObjectStore(home=tmp_path).fsync_backlog == FSYNC_BACKLOG


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"fsync": "behnd"}, "fsync = 'behnd': not an fsync mode (did you mean 'behind'?)"),
        ({"fsync": "Always"}, "(did you mean 'always'?)"),
        ({"fsync": "sometimes"}, '"behind" (the default), "always" (or true) or "off"'),
        ({"fsync": 1}, "fsync = 1: not an fsync mode"),
        ({"fsync_backlog": 0}, "fsync_backlog = 0: a whole number of at least 1"),
        ({"fsync_backlog": "64"}, "fsync_backlog = '64'"),
        ({"fsync_backlog": True}, "fsync_backlog = True"),
        ({"fsynk": "off"}, "fsynk"),
    ],
)
def test_a_bad_fsync_setting_is_an_error_naming_it_and_creates_nothing(
    tmp_path, settings, expected
):
    with pytest.raises(ConfigError) as err:
        FilesystemObjectStore(settings, home=tmp_path)
    assert expected in str(err.value)
    assert "filesystem" in str(err.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.anyio
async def test_behind_put_answers_before_its_fsyncs_and_close_waits_for_them_in_order(
    tmp_path, monkeypatch
):
    disk = SlowDisk(monkeypatch)
    store = FilesystemObjectStore(home=tmp_path)
    with anyio.fail_after(10):  # the fsync is held: put must not wait for it
        await store.put("runs/r1/t/trajectory.json", b'{"n": 1}')
    target = tmp_path / "objects" / "runs" / "r1" / "t" / "trajectory.json"
    assert target.read_bytes() == b'{"n": 1}'  # in place for every reader already
    assert disk.synced == []
    closed = anyio.Event()

    async def close() -> None:
        await store.close()
        closed.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(close)
        await anyio.sleep(0.3)
        assert not closed.is_set(), "close returned while an fsync was still held"
        disk.open()
        with anyio.fail_after(30):
            await closed.wait()
    # the file's bytes first, then the folder entry that names it, then the entry of each
    # folder the put created in its parent (objects/ included: the first put made it)
    made = [target.parent, target.parent.parent, tmp_path / "objects" / "runs"]
    assert disk.synced == [str(p) for p in (target, *made, tmp_path / "objects", tmp_path)]


@pytest.mark.anyio
async def test_a_put_into_existing_folders_fsyncs_only_the_file_and_its_folder(
    tmp_path, monkeypatch
):
    store = FilesystemObjectStore(home=tmp_path)
    await store.put("runs/r1/a", b"1")
    store.flush()
    disk = SlowDisk(monkeypatch)
    disk.open()
    await store.put("runs/r1/b", b"2")
    await store.close()
    target = tmp_path / "objects" / "runs" / "r1" / "b"
    assert disk.synced == [str(target), str(target.parent)]


@pytest.mark.anyio
async def test_always_fsyncs_the_file_before_it_is_in_place(tmp_path, monkeypatch):
    disk = SlowDisk(monkeypatch)
    store = FilesystemObjectStore({"fsync": "always"}, home=tmp_path)
    target = tmp_path / "objects" / "k"
    worker = _puts_in_thread(store, ["k"])
    deadline = time.monotonic() + 10
    while disk.waiting == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert disk.waiting == 1 and not target.exists() and worker.is_alive()
    disk.open()
    worker.join(30)
    assert target.read_bytes() == b"k"
    await store.close()
    # the folders' fsyncs ran behind, then: the store's own folder was new, so its parent too
    assert disk.synced[-2:] == [str(target.parent), str(tmp_path)]
    assert disk.synced[0].startswith(str(tmp_path / "objects" / ".staging"))


@pytest.mark.anyio
async def test_off_never_fsyncs(tmp_path, monkeypatch):
    disk = SlowDisk(monkeypatch)
    store = FilesystemObjectStore({"fsync": False}, home=tmp_path)
    with anyio.fail_after(10):
        await store.put("k", b"v")
        await store.close()
    assert disk.synced == [] and disk.waiting == 0 and store._syncer is None


@pytest.mark.anyio
async def test_a_disk_slower_than_the_writers_holds_put_back_at_the_backlog(tmp_path, monkeypatch):
    disk = SlowDisk(monkeypatch)
    store = FilesystemObjectStore({"fsync_backlog": 3}, home=tmp_path)
    keys = [f"o/{i}" for i in range(8)]
    worker = _puts_in_thread(store, keys)
    time.sleep(0.5)
    # 3 objects' fsyncs pending (one running, held at the gate), the 4th put waits for room
    written = sorted(p.name for p in (tmp_path / "objects" / "o").iterdir())
    assert written == ["0", "1", "2", "3"] and worker.is_alive()
    assert len(store._syncing) == 3
    disk.open()
    worker.join(30)
    assert not worker.is_alive()
    await store.close()
    assert store._syncing == set()
    for i, key in enumerate(keys):
        assert await store.get(key) == key.encode(), i
    files = [p for p in disk.synced if "/o/" in p]
    assert files == [str(tmp_path / "objects" / k) for k in keys]  # every one, in put order
