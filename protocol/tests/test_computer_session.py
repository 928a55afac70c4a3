"""A computer driver's session side, over real HTTP on the ASGI app and real processes:
computer-exec runs commands under the home (capped, timed out with their children, answered
once per request_id) and the data plane writes and reads files under the home, refusing paths
that leave it and writing nothing when any part is bad."""

from __future__ import annotations

import base64
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from PIL import Image as PILImage

from agentenv_protocol import DATA_OBJECTS_EXTENSION_URI
from agentenv_protocol.computer import (
    ComputerDriverEnvironment,
    ComputerSettings,
    Display,
    Platform,
    capture,
    click,
    display,
    drag,
    press,
    scroll,
    type_text,
)

pytestmark = pytest.mark.anyio
RUN = "/agentenv/ext/computer-exec/run"


class Blank(ComputerDriverEnvironment):
    """The required operations on a blank 64×48 screen; input is ignored."""

    @display
    def size(self):
        return Display(64, 48)

    @capture
    def grab(self):
        return PILImage.new("RGB", (64, 48))

    @click
    def click_at(self, x, y, button, count, modifiers):
        pass

    @drag
    def drag_along(self, path, button, duration_ms, modifiers):
        pass

    @scroll
    def scroll_at(self, x, y, direction, amount, modifiers):
        pass

    @type_text
    def type_in(self, text):
        pass

    @press
    def press_keys(self, keys):
        pass


def _driver(**settings) -> Blank:
    return Blank(settings=ComputerSettings(**settings), platform=Platform(os="linux"))


def _http(driver: Blank) -> httpx.AsyncClient:
    app = driver.create_app().streamable_http_app()
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://computer")


def _file(path: str, data: bytes) -> dict:
    return {
        "kind": "file",
        "file": {"bytes": base64.b64encode(data).decode()},
        "metadata": {DATA_OBJECTS_EXTENSION_URI: {"path": path}},
    }


def _gone(pid: int) -> bool:
    """The process ended (a zombie left for a parent that no longer reaps counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def _rpc(method: str, params: dict) -> dict:
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


async def test_a_command_runs_under_the_home_with_its_env_and_its_output_capped(home):
    (home / "work").mkdir()
    async with _http(_driver(exec_output_bytes=6)) as http:
        ran = (
            await http.post(
                RUN,
                json={
                    "argv": ["sh", "-c", 'printf "$WHO:%s" "$(pwd)"; exit 4'],
                    "request_id": "r1",
                    "cwd": "work",
                    "env": {"WHO": "me"},
                },
            )
        ).json()
        long = (
            await http.post(RUN, json={"argv": ["sh", "-c", "echo 123456789"], "request_id": "r2"})
        ).json()
    assert ran["exit_code"] == 4 and ran["stdout"] == "me:/tm" and ran["truncated"] is True
    assert long == {
        "exit_code": 0,
        "stdout": "123456",
        "stderr": "",
        "truncated": True,
        "timed_out": False,
    }


async def test_a_timed_out_command_is_killed_with_its_children(home):
    async with _http(_driver()) as http:
        started = time.monotonic()
        answer = (
            await http.post(
                RUN,
                json={
                    "argv": ["sh", "-c", "sleep 20 & echo $! > child; wait"],
                    "request_id": "t",
                    "timeout_s": 0.5,
                },
            )
        ).json()
        elapsed = time.monotonic() - started
    child = int((home / "child").read_text())
    await anyio.sleep(0.2)
    assert answer["timed_out"] is True and answer["exit_code"] is None and elapsed < 5
    assert _gone(child), "the command's child outlived its timeout"


async def test_a_request_id_runs_once_and_a_bad_request_runs_nothing(home):
    count = {"argv": ["sh", "-c", "echo x >> ran; wc -l < ran"], "request_id": "same"}
    async with _http(_driver()) as http:
        first = (await http.post(RUN, json=count)).json()
        second = (await http.post(RUN, json=count)).json()
        refused = [
            await http.post(RUN, json={**count, "request_id": "other", **bad})
            for bad in ({"argv": []}, {"timeout_s": 0}, {"argv": "echo"}, {"unknown": 1})
        ]
        missing = await http.post(
            RUN, json={"argv": ["agentenv-no-such-program"], "request_id": "m"}
        )
    assert first == second and first["stdout"].strip() == "1"
    assert [r.status_code for r in refused] == [400] * 4
    assert (home / "ran").read_text() == "x\n"
    assert missing.status_code == 400 and missing.json()["error"]["code"] == "invalid_argument"


async def test_data_add_writes_every_part_or_none(home):
    async with _http(_driver()) as http:
        written = (
            await http.post(
                "/agentenv",
                json=_rpc(
                    "data/add",
                    {"parts": [_file("inbox/a.txt", b"alpha"), _file("b.bin", b"\x00\xff")]},
                ),
            )
        ).json()
        escaped = (
            await http.post(
                "/agentenv",
                json=_rpc(
                    "data/add",
                    {"parts": [_file("c.txt", b"never"), _file("inbox/../../etc/x", b"no")]},
                ),
            )
        ).json()
    assert written["result"] == {}
    assert (home / "inbox" / "a.txt").read_bytes() == b"alpha" and (
        home / "b.bin"
    ).read_bytes() == b"\x00\xff"
    assert escaped["error"]["data"]["code"] == "add_failed"
    assert "not a normalized path relative to the home" in escaped["error"]["message"]
    assert not (home / "c.txt").exists(), "the good part before the bad one was not written either"


async def test_data_get_returns_the_data_paths_and_nothing_outside_the_home(home, tmp_path_factory):
    (home / "app").mkdir()
    (home / "app" / "state.json").write_text("{}")
    secret = tmp_path_factory.mktemp("elsewhere") / "secret.txt"
    secret.write_text("private")
    (home / "app" / "link.txt").symlink_to(secret)
    async with _http(_driver(data_paths=["app", "absent"])) as http:
        parts = (await http.post("/agentenv", json=_rpc("data/get", {}))).json()["result"]["parts"]
    assert [p["metadata"][DATA_OBJECTS_EXTENSION_URI]["path"] for p in parts] == ["app/state.json"]
    assert parts[0]["file"]["mimeType"] == "application/json"
    assert base64.b64decode(parts[0]["file"]["bytes"]) == b"{}"


@contextlib.contextmanager
def _served(driver: Blank) -> Iterator[str]:
    """The driver's FastMCP app on loopback (uvicorn in a thread), its URL."""
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            driver.create_app().streamable_http_app(),
            host="127.0.0.1",
            port=port,
            log_level="warning",
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the driver did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


async def test_the_conformance_probe_passes_our_driver_at_basic_level(home):
    from agentenv_protocol.computer.conformance import run_probe

    with _served(_driver()) as url:
        report = await run_probe(url, "basic", timeout_s=20)
    failed = [f"{c.name}: {c.detail}" for c in report.checks if c.status != "passed"]
    assert report.passed and failed == []
    names = {c.name for c in report.checks}
    assert {
        "computer-ready reports ready",
        "a region comes back as a native crop of its frame",
        "a program that isn't there is refused with a code",
        "output past max_output_bytes is cut there",
        "a tool disabled for a role is hidden from it and refused",
    } <= names
    assert report.driver == "Blank" and report.counts()["failed"] == 0


def test_the_conformance_command_exits_2_for_a_driver_it_cannot_reach(capsys):
    from agentenv_protocol.computer.conformance.__main__ import main

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main([f"http://127.0.0.1:{port}", "--timeout", "2"]) == 2
    assert f"http://127.0.0.1:{port}" in capsys.readouterr().err
