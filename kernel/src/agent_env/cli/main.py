"""The console-script entry point. `agent-env --version` answers before click is imported;
everything else goes to the lazy root group in `agent_env.cli.root`."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["main", "cli", "build_cli"]  # noqa: F822 - cli, build_cli load lazily (__getattr__)


def main(argv: list[str] | None = None) -> None:
    """`agent-env` itself."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args == ["--version"]:
        from agent_env._version import __version__

        sys.stdout.write(f"agent-env {__version__}\n")
        return
    from agent_env.cli.root import cli

    cli.main(args=args, prog_name="agent-env")


def __getattr__(name: str) -> Any:
    if name in ("cli", "build_cli", "RootGroup", "report_error", "KERNEL_COMMANDS"):
        from agent_env.cli import root

        return getattr(root, name)
    raise AttributeError(f"module 'agent_env.cli.main' has no attribute {name!r}")
