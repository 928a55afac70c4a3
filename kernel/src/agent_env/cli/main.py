"""The console-script entry point (`console`, which runs `main`). `agent-env --version` answers
before click is imported; everything else goes to the lazy root group in `agent_env.cli.root`.
"""

from __future__ import annotations

import sys
from typing import Any

from agent_env.cli import startup

# cli and build_cli load lazily (__getattr__)
__all__ = ["console", "main", "cli", "build_cli"]  # noqa: F822


def main(argv: list[str] | None = None) -> None:
    """`agent-env` itself."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args == ["--version"]:
        from agent_env._version import __version__

        sys.stdout.write(f"agent-env {__version__}\n")
        return
    if _console:  # a process of its own: cache what its start-up generates
        from agent_env import entrypoints
        from agent_env.cli import codecache, importcache

        command = args[0] if args and not args[0].startswith("-") else ""
        detail = args[1:] if command else args
        importcache.install(command, detail)
        entrypoints.read_once()
        codecache.install(command, detail)
    from agent_env.cli.root import cli

    cli.main(args=args, prog_name="agent-env")


#: Set by the console script (`console`): this process is agent-env's own.
_console = False


def console() -> None:
    """The `agent-env` script: `main`, then an exit that skips the interpreter's teardown.

    Tearing down a process that imported a few hundred modules (clearing each module, a last
    garbage collection of everything) took about a sixth of `agent-env run hello`, to free
    memory the OS takes back anyway. What an exit owes the user still happens: the `atexit`
    handlers run (logging's flush, plugins' own), stdout and stderr are flushed (exit status
    120 when stdout cannot be, as Python's own exit gives), and a command that left
    non-daemon threads running gets the ordinary exit, which waits for them. Callers that
    embed the CLI call `main`, which raises `SystemExit` as usual."""
    global _console
    _console = True
    startup.pause_collector()
    try:
        main()
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    exit_now(code)


def exit_now(code: Any) -> None:
    """Exit with `code` (as `SystemExit` takes it) without tearing the interpreter down."""
    import threading

    aio = sys.modules.get("agent_env.aio")  # its worker threads are idle: not waited for
    main_thread = threading.main_thread()
    others = (t for t in threading.enumerate() if t is not main_thread)
    if any(not t.daemon and not (aio and aio.is_worker(t)) for t in others):
        raise SystemExit(code)  # the ordinary exit waits for them (daemon threads it does not)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # a message, as `sys.exit("...")` prints it
        print(code, file=sys.stderr)
        status = 1
    import atexit
    import os

    atexit._run_exitfuncs()
    for stream, failed in ((sys.stdout, 120), (sys.stderr, None)):
        try:
            if stream is not None:  # None: the process started with it closed
                stream.flush()
        except (OSError, ValueError):
            status = status or failed or 0
    os._exit(status & 0xFF)


def __getattr__(name: str) -> Any:
    if name in ("cli", "build_cli", "RootGroup", "report_error", "KERNEL_COMMANDS"):
        from agent_env.cli import root

        return getattr(root, name)
    raise AttributeError(f"module 'agent_env.cli.main' has no attribute {name!r}")
