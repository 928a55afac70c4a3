"""Behaviour specific to the local backends: where data lands, crash safety, odd files."""

import json
import os
import signal
import sqlite3
import threading
import time

import anyio
import pytest

from agent_env.errors import ConfigError, StoreError
from agent_env.stores.env_secrets import EnvSecretStore
from agent_env.stores.filesystem import FilesystemObjectStore
from agent_env.stores.sqlite import SqliteDocumentStore


@pytest.fixture
def anyio_backend():
    return "asyncio"


# -- sqlite -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_sqlite_two_instances_share_one_file(tmp_path):
    a, b = SqliteDocumentStore(home=tmp_path), SqliteDocumentStore(home=tmp_path)
    await a.put("runs", "r", {"n": 1})
    assert await b.get("runs", "r") == {"n": 1}
    assert await b.create("runs", "r", {"n": 2}) is False
    await a.close()
    await b.close()
    reopened = SqliteDocumentStore(home=tmp_path)
    assert await reopened.list("runs") == [("r", {"n": 1})]
    await reopened.close()


@pytest.mark.anyio
async def test_sqlite_survives_a_writer_holding_the_lock(tmp_path):
    store = SqliteDocumentStore({"busy_timeout": 5}, home=tmp_path)
    await store.put("c", "k", {"v": 0})
    other = sqlite3.connect(
        tmp_path / "documents.sqlite3", isolation_level=None, check_same_thread=False
    )
    other.execute("BEGIN IMMEDIATE")
    released = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    released.start()
    with anyio.fail_after(5):
        await store.put("c", "k", {"v": 1})
    released.join()
    other.close()
    assert await store.get("c", "k") == {"v": 1}
    await store.close()


@pytest.mark.anyio
async def test_sqlite_not_a_database_is_a_store_error(tmp_path):
    (tmp_path / "documents.sqlite3").write_bytes(b"this is not sqlite" * 100)
    store = SqliteDocumentStore(home=tmp_path)
    with pytest.raises(StoreError, match="documents.sqlite3"):
        await store.get("c", "k")


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"pth": "x"}, "unknown setting 'pth' (did you mean 'path'?)"),
        ({"synchronous": "sometimes"}, "use one of"),
        (
            {"synchronous": "NORMALL"},
            "synchronous = 'NORMALL': not a mode (did you mean 'NORMAL'?)",
        ),
    ],
)
def test_sqlite_bad_settings(tmp_path, settings, message):
    with pytest.raises(ConfigError) as info:
        SqliteDocumentStore(settings, home=tmp_path)
    assert message in str(info.value)


@pytest.mark.anyio
async def test_sqlite_store_usable_after_fork(tmp_path):
    store = SqliteDocumentStore(home=tmp_path)
    await store.put("c", "parent", {})
    pid = os.fork()
    if pid == 0:  # the child reopens instead of sharing the parent's connection
        code = [1]

        def child() -> None:  # a thread of its own: this one still holds the parent's loop
            anyio.run(store.put, "c", "child", {"pid": os.getpid()})
            code[0] = 0

        try:
            worker = threading.Thread(target=child)
            worker.start()
            worker.join()
        finally:
            os._exit(code[0])
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert [k for k, _ in await store.list("c")] == ["child", "parent"]
    await store.close()


# -- filesystem ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_filesystem_layout_and_no_leftover_temp_files(tmp_path):
    store = FilesystemObjectStore(home=tmp_path)
    for i in range(5):
        await store.put(f"artifacts/greeting/v{i}", b"x" * i)
    assert sorted(p.name for p in (tmp_path / "objects" / "artifacts" / "greeting").iterdir()) == [
        f"v{i}" for i in range(5)
    ]
    assert list((tmp_path / "objects" / ".staging").iterdir()) == []
    assert ".staging" not in str(await store.list())


@pytest.mark.anyio
async def test_filesystem_put_is_readable_at_once_and_close_waits_for_the_folder_fsyncs(tmp_path):
    import subprocess
    import sys

    store = FilesystemObjectStore(home=tmp_path)
    for i in range(20):
        await store.put(f"runs/r{i}/t/trajectory.json", b'{"n": %d}' % i)
    # another process reads every object as soon as put returned
    read = subprocess.run(
        [sys.executable, "-c", "import sys, pathlib; print(pathlib.Path(sys.argv[1]).read_text())",
         str(tmp_path / "objects" / "runs" / "r19" / "t" / "trajectory.json")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert read.stdout.strip() == '{"n": 19}', read.stderr
    syncer = store._syncer
    assert syncer is not None
    threads = list(syncer._threads)
    assert threads and all(t.name.startswith("objects-fsync") for t in threads)
    await store.close()
    assert store._syncing == set() and store._syncer is None
    assert not any(t.is_alive() for t in threads)  # every fsync done, the thread ended
    unsynced = FilesystemObjectStore({"fsync": False}, home=tmp_path)
    await unsynced.put("k", b"v")
    assert unsynced._syncer is None and await unsynced.get("k") == b"v"
    await unsynced.close()


@pytest.mark.anyio
async def test_filesystem_store_puts_and_closes_in_a_forked_child(tmp_path):
    store = FilesystemObjectStore(home=tmp_path)
    await store.put("a/parent", b"p")  # its fsync thread exists; a forked child has none
    pid = os.fork()
    if pid == 0:
        code = [1]

        def child() -> None:  # a thread of its own: this one still holds the parent's loop
            async def put_and_close() -> None:
                with anyio.fail_after(20):  # a copied executor would never run the fsync
                    await store.put("b/child", b"c")
                    await store.close()

            anyio.run(put_and_close)
            code[0] = 0

        try:
            worker = threading.Thread(target=child)
            worker.start()
            worker.join()
        finally:
            os._exit(code[0])
    deadline = time.monotonic() + 60
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        await anyio.sleep(0.05)
    if done[0] == 0:  # a close that waits for an fsync no thread will ever run
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child's put and close did not finish within 60 s")
    assert os.waitstatus_to_exitcode(done[1]) == 0
    assert await store.get("b/child") == b"c"
    await store.close()


@pytest.mark.anyio
async def test_filesystem_failed_write_leaves_old_object(tmp_path):
    store = FilesystemObjectStore(home=tmp_path)
    await store.put("k", b"old")

    def explode(fh):
        fh.write(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        await anyio.to_thread.run_sync(store._write, "k", explode)
    assert await store.get("k") == b"old"
    assert list((tmp_path / "objects" / ".staging").iterdir()) == []


@pytest.mark.anyio
async def test_filesystem_object_and_folder_conflicts(tmp_path):
    store = FilesystemObjectStore(home=tmp_path)
    await store.put("a", b"file")
    with pytest.raises(StoreError, match="parent part is an object"):
        await store.put("a/b", b"x")
    await store.put("d/e", b"x")
    with pytest.raises(StoreError, match="other objects live under 'd/'"):
        await store.put("d", b"x")
    assert await store.list() == ["a", "d/e"]


@pytest.mark.anyio
async def test_filesystem_delete_prunes_empty_folders(tmp_path):
    store = FilesystemObjectStore(home=tmp_path)
    await store.put("x/y/z", b"1")
    await store.put("x/keep", b"2")
    await store.delete("x/y/z")
    assert not (tmp_path / "objects" / "x" / "y").exists()
    assert (tmp_path / "objects" / "x" / "keep").exists()


@pytest.mark.anyio
async def test_filesystem_root_setting_and_escaping_keys(tmp_path):
    store = FilesystemObjectStore({"root": str(tmp_path / "r")}, home=tmp_path / "unused")
    await store.put("k", b"v")
    assert (tmp_path / "r" / "k").read_bytes() == b"v"
    with pytest.raises(StoreError):
        await store.get("../unused/k")
    with pytest.raises(ConfigError, match="unknown setting"):
        FilesystemObjectStore({"rot": "x"}, home=tmp_path)


# -- env secrets --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_env_vars_are_read_and_win_over_the_file(tmp_path, monkeypatch):
    store = EnvSecretStore(home=tmp_path)
    await store.set("openai-key", "from-file")
    assert await store.get("openai-key") == "from-file"
    monkeypatch.setenv("AGENT_ENV_SECRET_OPENAI_KEY", "from-env")
    assert await store.get("openai-key") == "from-env"
    assert await store.get("OPENAI_KEY") == "from-env"
    monkeypatch.setenv("AGENT_ENV_SECRET_HF_TOKEN", "hf")
    names = await store.list()
    assert "HF_TOKEN" in names and "openai-key" in names and "OPENAI_KEY" not in names
    await store.delete("openai-key")
    assert await store.get("openai-key") == "from-env"


@pytest.mark.anyio
async def test_secrets_file_is_private_json(tmp_path):
    store = EnvSecretStore(home=tmp_path)
    await store.set("a", "1")
    await store.set("b", "2")
    path = tmp_path / "secrets.json"
    assert path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text()) == {"a": "1", "b": "2"}
    path.chmod(0o644)
    await store.set("c", "3")
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.anyio
@pytest.mark.parametrize("content", ["{not json", '["a list"]', '{"a": 1}'])
async def test_corrupt_secrets_file_is_a_store_error(tmp_path, content):
    (tmp_path / "secrets.json").write_text(content)
    store = EnvSecretStore(home=tmp_path)
    with pytest.raises(StoreError, match="secrets.json"):
        await store.get("a")
    with pytest.raises(StoreError, match="secrets.json"):
        await store.set("a", "v")
    assert (tmp_path / "secrets.json").read_text() == content


@pytest.mark.anyio
async def test_secret_sets_from_many_instances_are_all_kept(tmp_path):
    def writer(i: int) -> None:
        anyio.run(EnvSecretStore(home=tmp_path).set, f"s{i}", f"v{i}")

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    store = EnvSecretStore(home=tmp_path)
    assert {n: await store.get(n) for n in await store.list()} == {
        f"s{i}": f"v{i}" for i in range(8)
    }


@pytest.mark.anyio
async def test_env_prefix_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("MYAPP_TOKEN", "t")
    store = EnvSecretStore({"env_prefix": "MYAPP_"}, home=tmp_path)
    assert await store.get("token") == "t"
    with pytest.raises(ConfigError, match="unknown setting"):
        EnvSecretStore({"prefix": "x"}, home=tmp_path)
