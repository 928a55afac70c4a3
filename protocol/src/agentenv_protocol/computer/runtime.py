"""What runs in a computer driver's process.

- `ExecRuns`: commands a driver runs for `computer-exec`: one run per `request_id` (a repeated
  id gets the first result, a running one is joined), the latest `KEEP_EXEC_RESULTS` results
  remembered; a run that failed to start is not remembered.
- `run` / `main`: the driver itself on a virtual X display, what a `computer_driver` env's
  container runs (`main()` with the argument `driver.py:MyDriver`):
  starts Xvfb (unless `DISPLAY` already names a display), then the apps the env asks for on
  it (`AGENTENV_DISPLAY_APPS`), then serves the driver class until the server stops, and stops
  what it started.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs

KEEP_EXEC_RESULTS = 256


@attrs.define
class ExecRuns:
    """The running and finished commands of one driver, by request id."""

    _running: dict = attrs.field(factory=dict)
    _done: OrderedDict = attrs.field(factory=OrderedDict)

    async def once(self, request_id: str, start: Callable[[], Awaitable[dict]]) -> dict:
        if request_id in self._done:
            return self._done[request_id]
        running = self._running.get(request_id)
        if running is None:
            running = asyncio.ensure_future(start())
            self._running[request_id] = running
            running.add_done_callback(lambda task: self._finished(request_id, task))
        return await asyncio.shield(running)

    def _finished(self, request_id: str, task: asyncio.Future) -> None:
        self._running.pop(request_id, None)
        if task.cancelled() or task.exception() is not None:
            return
        self._done[request_id] = task.result()
        while len(self._done) > KEEP_EXEC_RESULTS:
            self._done.popitem(last=False)


#: The screen Xvfb makes, `WIDTHxHEIGHTxDEPTH`.
SCREEN_ENV = "AGENTENV_SCREEN"
DEFAULT_SCREEN = "1280x800x24"
#: A JSON list of commands (each an argv list) started on the display before the driver.
APPS_ENV = "AGENTENV_DISPLAY_APPS"
#: How long Xvfb may take to say which display it opened.
XVFB_START_TIMEOUT_S = 20.0


class DisplayError(RuntimeError):
    """The virtual display could not be started; the message says why and what to install."""


class VirtualDisplay:
    """An Xvfb server on a display number it picks itself (`-displayfd`), with XTEST on, so a
    driver can capture the screen and send input; `screen` is Xvfb's `WIDTHxHEIGHTxDEPTH` (the
    `computer_driver` env type checked it). `start()` returns the `DISPLAY` value."""

    def __init__(self, screen: str = DEFAULT_SCREEN) -> None:
        self.screen = screen
        self.process: subprocess.Popen[bytes] | None = None
        self.display: str | None = None

    def start(self) -> str:
        xvfb = shutil.which("Xvfb")
        if xvfb is None:
            raise DisplayError(
                "Xvfb is not installed (Debian package `xvfb`); a computer_driver env's image "
                "installs it"
            )
        read_fd, write_fd = os.pipe()
        argv = [
            xvfb,
            "-displayfd",
            str(write_fd),
            "-screen",
            "0",
            self.screen,
            "-nolisten",
            "tcp",
            "+extension",
            "XTEST",
        ]
        self.process = subprocess.Popen(
            argv, pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        os.close(write_fd)
        try:
            number = _read_line(read_fd, XVFB_START_TIMEOUT_S)
        finally:
            os.close(read_fd)
        if not number.isdigit():
            self.stop()
            err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
            raise DisplayError(
                f"Xvfb did not open a display ({number or 'no answer'}): {err[-2000:]}"
            )
        self.display = f":{number}"
        return self.display

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def _read_line(fd: int, timeout: float) -> str:
    """One line from `fd`, or what came before EOF or `timeout` seconds."""
    import select

    data = b""
    while not data.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return data.decode(errors="replace").strip() or "timed out"
        chunk = os.read(fd, 64)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace").strip()


def start_apps(apps: list[list[str]], display: str, started: list[subprocess.Popen[bytes]]) -> None:
    """Start each app (an argv list) on `display`, each in its own session, adding it to
    `started` (so the caller stops the ones that started when a later one cannot)."""
    env = {**os.environ, "DISPLAY": display}
    for argv in apps:
        try:
            started.append(subprocess.Popen(argv, env=env, start_new_session=True))
        except OSError as e:
            raise DisplayError(f"app {argv!r} could not start on {display}: {e}") from None


def read_apps(text: str | None) -> list[list[str]]:
    """`AGENTENV_DISPLAY_APPS` (a JSON list of argv lists) as a list; `ValueError` otherwise."""
    if not text:
        return []
    value = json.loads(text)
    if not isinstance(value, list) or not all(
        isinstance(a, list) and a and all(isinstance(p, str) for p in a) for a in value
    ):
        raise ValueError(f"{APPS_ENV}: expected a JSON list of non-empty argv lists, got {text!r}")
    return value


def load_driver(spec: str, root: Path) -> type[Any]:
    """The class `spec` names: `file.py:Class` (a file under `root`) or `package.module:Class`."""
    where, sep, name = spec.partition(":")
    if not sep or not where or not name.isidentifier():
        raise ValueError(f"module {spec!r}: expected 'file.py:Class' or 'package.module:Class'")
    if where.endswith(".py"):
        path = (root / where).resolve()
        if not path.is_file():
            raise ValueError(f"module {spec!r}: no file {where!r} in {root}")
        sys.path.insert(0, str(path.parent))
        module_name = path.stem
    else:
        sys.path.insert(0, str(root))
        module_name = where
    module = importlib.import_module(module_name)
    try:
        return getattr(module, name)
    except AttributeError:
        found = sorted(n for n, v in vars(module).items() if isinstance(v, type))
        raise ValueError(f"module {spec!r}: {where} has no {name!r} (classes: {found})") from None


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run(spec: str, root: Path | None = None) -> int:
    """Start the display and apps, serve the driver `spec` names, then stop them."""
    root = root or Path.cwd()
    display = None
    apps: list[subprocess.Popen[bytes]] = []
    if not os.environ.get("DISPLAY"):
        display = VirtualDisplay(os.environ.get(SCREEN_ENV) or DEFAULT_SCREEN)
        os.environ["DISPLAY"] = display.start()
        print(f"agentenv: virtual display {os.environ['DISPLAY']}", file=sys.stderr, flush=True)
    # a container's first process gets no default SIGTERM action: stop as a server would
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        start_apps(read_apps(os.environ.get(APPS_ENV)), os.environ["DISPLAY"], apps)
        driver_class = load_driver(spec, root)
        driver_class().serve()
    except KeyboardInterrupt:
        pass
    finally:
        for app in apps:
            if app.poll() is None:
                app.terminate()
        if display is not None:
            display.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: runtime FILE.py:CLASS (or package.module:CLASS)", file=sys.stderr)
        return 2
    try:
        return run(args[0])
    except (DisplayError, ValueError) as e:
        print(f"agentenv: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
