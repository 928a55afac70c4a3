"""Run a computer driver on a virtual X display: what a `computer_driver` env's container runs.

    python -m agentenv_protocol.computer.runtime driver.py:MyDriver

starts Xvfb (unless `DISPLAY` already names a display), then the apps the env asks for on it,
then serves the driver class until the server stops, and stops what it started. Stdlib only:
the driver's own imports (Pillow, python-xlib, mss) are the driver's business.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

#: The screen Xvfb makes, `WIDTHxHEIGHTxDEPTH`.
SCREEN_ENV = "AGENTENV_SCREEN"
DEFAULT_SCREEN = "1280x800x24"
#: A JSON list of commands (each an argv list) started on the display before the driver.
APPS_ENV = "AGENTENV_DISPLAY_APPS"
#: How long Xvfb may take to say which display it opened.
XVFB_START_TIMEOUT_S = 20.0


class DisplayError(RuntimeError):
    """The virtual display could not be started; the message says why and what to install."""


def parse_screen(text: str) -> tuple[int, int, int]:
    """`WIDTHxHEIGHTxDEPTH` (depth 24 when left out) as numbers; `ValueError` naming the form."""
    parts = text.lower().split("x")
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        numbers = []
    if len(numbers) == 2:
        numbers.append(24)
    if len(numbers) != 3 or not (
        16 <= numbers[0] <= 8192 and 16 <= numbers[1] <= 8192 and numbers[2] in (8, 16, 24)
    ):
        raise ValueError(
            f"screen {text!r}: expected WIDTHxHEIGHT[xDEPTH], each side 16..8192 and depth "
            "8, 16 or 24 (e.g. 1280x800x24)"
        )
    return numbers[0], numbers[1], numbers[2]


class VirtualDisplay:
    """An Xvfb server on a display number it picks itself (`-displayfd`), with XTEST on, so a
    driver can capture the screen and send input. `start()` returns the `DISPLAY` value."""

    def __init__(self, screen: str = DEFAULT_SCREEN) -> None:
        self.width, self.height, self.depth = parse_screen(screen)
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
            f"{self.width}x{self.height}x{self.depth}",
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


def start_apps(apps: list[list[str]], display: str) -> list[subprocess.Popen[bytes]]:
    """Start each app (an argv list) on `display`, each in its own session."""
    env = {**os.environ, "DISPLAY": display}
    started = []
    for argv in apps:
        try:
            started.append(subprocess.Popen(argv, env=env, start_new_session=True))
        except OSError as e:
            raise DisplayError(f"app {argv!r} could not start on {display}: {e}") from None
    return started


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
        apps = start_apps(read_apps(os.environ.get(APPS_ENV)), os.environ["DISPLAY"])
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
        print("usage: python -m agentenv_protocol.computer.runtime FILE.py:CLASS", file=sys.stderr)
        return 2
    try:
        return run(args[0])
    except (DisplayError, ValueError) as e:
        print(f"agentenv: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
