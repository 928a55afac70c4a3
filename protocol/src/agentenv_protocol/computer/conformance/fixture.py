"""The fixture app the probe drives: a small Tk window (a grid of cells, a drawing pad that
scrolls, a name field, a notes box, colour markers) that writes its layout (screen pixels) and
every event it sees as JSON under the home, so the probe reads what its input did."""

from __future__ import annotations

from pathlib import Path

APP_PATH = ".agentenv-probe/fixture_app.py"
LAYOUT_PATH = ".agentenv-probe/layout.json"
STATE_PATH = ".agentenv-probe/state.json"
INBOX_PATH = ".agentenv-probe/inbox.txt"

STATE_COMMAND = ("cat", STATE_PATH)
LAYOUT_COMMAND = ("cat", LAYOUT_PATH)
PID_PATH = ".agentenv-probe/pid"

START_COMMAND = (
    "sh",
    "-c",
    f"rm -f {LAYOUT_PATH}; nohup python3 {APP_PATH} >/dev/null 2>&1 & echo $! > {PID_PATH}",
)
STOP_COMMAND = ("sh", "-c", f"kill $(cat {PID_PATH}) 2>/dev/null; rm -rf .agentenv-probe")


def source() -> bytes:
    """The app's source (fixture_app.py beside this module), sent to the computer."""
    return (Path(__file__).with_name("fixture_app.py")).read_bytes()


def write_command(data: bytes) -> tuple[str, ...]:
    """A command that writes the app where START_COMMAND runs it (when data/add can't)."""
    import base64
    import shlex

    encoded = base64.b64encode(data).decode()
    return (
        "sh",
        "-c",
        f"mkdir -p .agentenv-probe && echo {shlex.quote(encoded)} | base64 -d > {APP_PATH}",
    )
