"""The `agent-env` script exits without tearing the interpreter down (`console`), yet keeps
what an exit owes: the exit status, every byte of output, the `atexit` handlers, and the
threads a command left running."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("agent-env")


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "AGENT_ENV_HOME": str(tmp_path / "home")}


def test_the_script_is_console():
    first = SCRIPT.read_text().splitlines()
    assert any("from agent_env.cli.main import console" in line for line in first)


@pytest.mark.parametrize(
    ("args", "status"), [(["--help"], 0), (["runs", "show", "nope"], 1), (["bogus"], 2)]
)
def test_exit_status_is_kept(tmp_path, args, status):
    done = subprocess.run(
        [str(SCRIPT), *args], env=_env(tmp_path), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == status, done.stderr


def test_long_output_through_a_pipe_arrives_whole(tmp_path):
    whole = subprocess.run(
        [str(SCRIPT), "completion", "zsh"], env=_env(tmp_path), capture_output=True, timeout=60
    )
    assert whole.returncode == 0
    assert len(whole.stdout) > 1000 and whole.stdout.endswith(b"\n")
    reference = subprocess.run(
        [sys.executable, "-c", "from agent_env.cli.main import main; main(['completion', 'zsh'])"],
        env=_env(tmp_path),
        capture_output=True,
        timeout=60,
    )
    assert whole.stdout == reference.stdout


def _drive(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    code = textwrap.dedent(
        """
        import atexit, sys, threading, time
        from pathlib import Path
        from agent_env.cli.main import console
        out = Path(sys.argv[1])
        """
    ) + textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "out.txt"), "--version"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_atexit_handlers_run(tmp_path):
    done = _drive(
        tmp_path,
        """
        atexit.register(lambda: out.write_text("handler ran"))
        sys.argv = ["agent-env", "--version"]
        console()
        out.write_text("console returned")  # never: console exits
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("agent-env ")
    assert (tmp_path / "out.txt").read_text() == "handler ran"


def test_a_thread_left_running_is_waited_for(tmp_path):
    done = _drive(
        tmp_path,
        """
        def late():
            time.sleep(0.5)
            out.write_text("thread finished")
        threading.Thread(target=late).start()
        sys.argv = ["agent-env", "--version"]
        console()
        """,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.txt").read_text() == "thread finished"


def test_a_daemon_thread_does_not_hold_the_exit(tmp_path):
    """As with Python's own exit, a daemon thread is not waited for."""
    done = _drive(
        tmp_path,
        """
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        atexit.register(lambda: out.write_text("handler ran"))
        sys.argv = ["agent-env", "--version"]
        console()
        """,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.txt").read_text() == "handler ran"


def test_closed_stdout_is_no_error(tmp_path):
    done = subprocess.run(
        [str(SCRIPT), "--help"], env=_env(tmp_path), stdout=subprocess.DEVNULL, timeout=60
    )
    assert done.returncode == 0
    closed = subprocess.run(
        f"exec '{SCRIPT}' --help >&-", shell=True, env=_env(tmp_path), capture_output=True
    )
    assert closed.returncode == 0 and b"Traceback" not in closed.stderr, closed.stderr
