"""`SandboxProviderContract`: the behaviour every sandbox provider must show.

Subclass it in your provider's tests and provide a `provider` fixture (a ready instance);
override `sandbox_spec` when sandboxes need an image, and `leftovers` to look for what a
torn-down sandbox could leave behind in your backend::

    class TestDocker(SandboxProviderContract):
        @pytest.fixture
        def provider(self, tmp_path):
            return DockerProvider({}, home=tmp_path)

        def sandbox_spec(self, **kw):
            return SandboxSpec(image="python:3.11-slim", **kw)

Sandboxes need `sh`, `cat`, `sleep` and `python3` on their PATH.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_env.errors import SandboxError
from agent_env.sandbox import Sandbox, SandboxProvider, SandboxSpec
from agent_env.sandboxes import procs

SERVER = """\
import http.server, os
port = int(os.environ.get("PORT") or 8080)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("pong " + os.environ.get("GREETING", "")).encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("0.0.0.0", port), H).serve_forever()
"""


def dead_pid() -> int:
    """The pid of a process that has exited (for 'owner is dead' cases)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


async def wait_http(url: str, timeout: float = 15.0) -> str:
    """GET `url` until it answers 200 (or fail after `timeout` seconds); returns the body."""

    def get() -> str:
        with urllib.request.urlopen(url, timeout=2) as response:
            body: bytes = response.read()
            return body.decode()

    deadline = time.monotonic() + timeout
    while True:
        try:
            return await anyio.to_thread.run_sync(get)
        except (urllib.error.URLError, ConnectionError, OSError):
            if time.monotonic() > deadline:
                raise
            await anyio.sleep(0.05)


@pytest.mark.anyio
class SandboxProviderContract:
    """Create, exec, files, servers, reconnect, teardown and reaping, against a real backend."""

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    def provider(self) -> SandboxProvider:  # pragma: no cover - subclasses provide it
        raise NotImplementedError("subclass SandboxProviderContract and provide `provider`")

    def sandbox_spec(self, **kw: Any) -> SandboxSpec:
        return SandboxSpec(**kw)

    def url_port(self) -> int:
        """A sandbox port the host can reach through `url(port)` (the docker subclass's spec
        publishes 8080; the local one picks a free host port)."""
        return 8080

    def leftovers(self, provider: SandboxProvider, info: dict[str, Any]) -> list[str]:
        """What a torn-down sandbox left behind (processes, folders, containers...)."""
        return []

    @pytest.fixture
    async def sandbox(self, provider: SandboxProvider) -> AsyncIterator[Sandbox]:
        box = await provider.create(self.sandbox_spec(env_vars={"GREETING": "hello"}))
        try:
            yield box
        finally:
            await box.teardown()

    # -- exec ----------------------------------------------------------------------------

    async def test_exec_returns_stdout_stderr_and_exit_code(self, sandbox: Sandbox) -> None:
        result = await sandbox.exec("echo out; echo err >&2; exit 3", timeout=30)
        assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
        assert not result.timed_out

    async def test_exec_argument_list_is_not_split_by_a_shell(self, sandbox: Sandbox) -> None:
        result = await sandbox.exec(["echo", "a  b", "$HOME"], timeout=30)
        assert result.stdout == "a  b $HOME\n"

    async def test_spec_env_vars_and_exec_env_reach_the_command(self, sandbox: Sandbox) -> None:
        result = await sandbox.exec('echo "$GREETING $EXTRA"', env={"EXTRA": "world"}, timeout=30)
        assert result.stdout == "hello world\n"

    async def test_commands_run_in_app(self, sandbox: Sandbox) -> None:
        await sandbox.write_file("/app/marker.txt", b"here")
        result = await sandbox.exec("cat marker.txt && test -f /app/marker.txt", timeout=30)
        assert (result.exit_code, result.stdout) == (0, "here")
        await sandbox.write_file("/app/sub/m2.txt", b"sub")
        sub = await sandbox.exec("cat m2.txt", cwd="/app/sub", timeout=30)
        assert sub.stdout == "sub"

    async def test_exec_timeout_kills_the_command_and_its_children(self, sandbox: Sandbox) -> None:
        # durations no other process on the machine uses, so `ps` finds only this test's
        mark = f"{60 + random.random():.6f}"
        started = time.monotonic()
        result = await sandbox.exec(f"sleep {mark}1 & sleep {mark}2; echo never", timeout=0.5)
        assert result.timed_out
        assert result.exit_code != 0
        assert "never" not in result.stdout
        assert time.monotonic() - started < 10
        count = f"ps -eo args 2>/dev/null | grep -c '^sleep {mark}' || true"
        for _ in range(20):  # a killed child can take a moment to be gone
            check = await sandbox.exec(count, timeout=30)
            if check.stdout.strip() in ("0", ""):
                break
            await anyio.sleep(0.25)
        assert check.stdout.strip() in ("0", ""), check.stdout

    async def test_missing_command_is_exit_127(self, sandbox: Sandbox) -> None:
        result = await sandbox.exec(["definitely-not-a-command-xyz"], timeout=30)
        assert result.exit_code == 127

    # -- files ---------------------------------------------------------------------------

    async def test_write_read_round_trip_creates_parents(self, sandbox: Sandbox) -> None:
        data = bytes(range(256)) * 10
        await sandbox.write_file("/app/deep/er/data.bin", data)
        assert await sandbox.read_file("/app/deep/er/data.bin") == data
        listed = await sandbox.exec("wc -c < /app/deep/er/data.bin", timeout=30)
        assert listed.stdout.strip() == "2560"

    async def test_read_missing_file_raises_file_not_found(self, sandbox: Sandbox) -> None:
        with pytest.raises(FileNotFoundError):
            await sandbox.read_file("/app/nope.txt")

    async def test_write_file_mode_makes_scripts_executable(self, sandbox: Sandbox) -> None:
        await sandbox.write_file("/app/run.sh", b"#!/bin/sh\necho ran\n", mode=0o755)
        result = await sandbox.exec("/app/run.sh", timeout=30)
        assert (result.exit_code, result.stdout) == (0, "ran\n")

    async def test_copy_folders_in_and_out(self, sandbox: Sandbox, tmp_path: Path) -> None:
        src = tmp_path / "src"
        (src / "x").mkdir(parents=True)
        (src / "a.txt").write_text("A")
        (src / "x" / "b.txt").write_text("B")
        await sandbox.copy_in(src, "/app/tree")
        result = await sandbox.exec("cat /app/tree/a.txt /app/tree/x/b.txt", timeout=30)
        assert result.stdout == "AB"
        await sandbox.exec("echo C > /app/tree/x/c.txt", timeout=30)
        out = tmp_path / "out"
        await sandbox.copy_out("/app/tree", out)
        assert sorted(str(p.relative_to(out)) for p in out.rglob("*.txt")) == [
            "a.txt",
            "x/b.txt",
            "x/c.txt",
        ]
        assert (out / "x" / "c.txt").read_text() == "C\n"

    async def test_copy_a_single_file_in_and_out(self, sandbox: Sandbox, tmp_path: Path) -> None:
        (tmp_path / "one.txt").write_text("1")
        await sandbox.copy_in(tmp_path / "one.txt", "/app/in/one.txt")
        assert await sandbox.read_file("/app/in/one.txt") == b"1"
        await sandbox.copy_out("/app/in/one.txt", tmp_path / "back.txt")
        assert (tmp_path / "back.txt").read_text() == "1"

    # -- servers -------------------------------------------------------------------------

    async def test_start_process_is_reachable_from_the_host(self, sandbox: Sandbox) -> None:
        await sandbox.write_file("/app/server.py", SERVER.encode())
        process = await sandbox.start_process(["python3", "/app/server.py"], port=8080)
        assert process.url.startswith("http://")
        assert await wait_http(process.url) == "pong hello"
        assert await process.exit_code() is None

    async def test_url_of_a_port_reaches_a_server_listening_on_it(self, sandbox: Sandbox) -> None:
        """`url(port)` is where the host reaches sandbox port `port` (here a server that
        picks its port itself, through `PORT`)."""
        port = self.url_port()
        await sandbox.write_file("/app/server.py", SERVER.encode())
        await sandbox.start_process(["python3", "/app/server.py"], env={"PORT": str(port)})
        url = sandbox.url(port)
        assert url.startswith("http://")
        assert await wait_http(url) == "pong hello"

    async def test_process_handle_reports_exit_code_and_logs(self, sandbox: Sandbox) -> None:
        process = await sandbox.start_process("echo first line; echo second >&2; exit 3")
        deadline = time.monotonic() + 15
        while (code := await process.exit_code()) is None and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        assert code == 3
        assert (await process.logs()).splitlines() == ["first line", "second"]
        assert (await process.logs(tail=1)).splitlines() == ["second"]

    async def test_process_stop_stops_it(self, sandbox: Sandbox) -> None:
        await sandbox.write_file("/app/server.py", SERVER.encode())
        process = await sandbox.start_process(["python3", "/app/server.py"], port=8080)
        await wait_http(process.url)
        await process.stop()
        await process.stop()
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            await anyio.to_thread.run_sync(
                lambda: urllib.request.urlopen(process.url, timeout=2).read()
            )

    # -- reconnect and teardown ----------------------------------------------------------

    async def test_describe_is_json_and_connect_reaches_the_same_sandbox(
        self, provider: SandboxProvider, sandbox: Sandbox
    ) -> None:
        await sandbox.write_file("/app/id.txt", b"same")
        info = json.loads(json.dumps(sandbox.describe()))
        assert info.get("provider") == provider.type
        again = await provider.connect(info)
        assert again.id == sandbox.id
        assert await again.read_file("/app/id.txt") == b"same"

    async def test_teardown_leaves_nothing_and_is_idempotent(
        self, provider: SandboxProvider
    ) -> None:
        box = await provider.create(self.sandbox_spec())
        await box.write_file("/app/server.py", SERVER.encode())
        url = (await box.start_process(["python3", "/app/server.py"], port=8080)).url
        await wait_http(url)
        info = box.describe()
        await box.teardown()
        await box.teardown()
        with pytest.raises(SandboxError):
            await provider.connect(info)
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            await anyio.to_thread.run_sync(lambda: urllib.request.urlopen(url, timeout=2).read())
        assert self.leftovers(provider, info) == []

    async def test_connect_to_an_unknown_sandbox_is_a_sandbox_error(
        self, provider: SandboxProvider, sandbox: Sandbox
    ) -> None:
        info = dict(sandbox.describe())
        info["id"] = info["id"][:-4] + "zzzz"
        with pytest.raises(SandboxError):
            await provider.connect(info)

    # -- reaping -------------------------------------------------------------------------

    async def test_reap_tears_down_sandboxes_of_a_dead_owner_only(
        self, provider: SandboxProvider
    ) -> None:
        dead = {"owner_pid": str(dead_pid()), "owner_host": procs.hostname()}
        mine = {"owner_pid": str(os.getpid()), "owner_host": procs.hostname()}
        orphan = await provider.create(self.sandbox_spec(labels=dead))
        adopted = await provider.create(self.sandbox_spec(labels=dead))
        kept = await provider.create(self.sandbox_spec(labels=mine))
        try:
            await orphan.write_file("/app/server.py", SERVER.encode())
            url = (await orphan.start_process(["python3", "/app/server.py"], port=8080)).url
            await wait_http(url)
            info = orphan.describe()
            reaped = await provider.reap(adopt=[adopted.id])
            assert orphan.id in reaped
            assert adopted.id not in reaped and kept.id not in reaped
            assert self.leftovers(provider, info) == []
            assert (await kept.exec("echo ok", timeout=30)).stdout == "ok\n"
            assert (await adopted.exec("echo ok", timeout=30)).stdout == "ok\n"
        finally:
            for box in (orphan, adopted, kept):
                await box.teardown()
