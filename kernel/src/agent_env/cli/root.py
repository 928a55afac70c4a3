"""The `agent-env` root group. Errors become one `Error: ...` line (exit 1), usage errors
exit 2, Ctrl-C exits 130; `-v` adds the traceback. `--help` imports nothing heavy.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from agent_env import notices
from agent_env._version import __version__
from agent_env.cli.lazy import LazyGroup
from agent_env.cli.startup import resume_collector

#: The kernel's own commands: name -> (import path, short help).
KERNEL_COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("agent_env.cli.commands.run:run", "Run a bundle's tasks and score them."),
    "runs": ("agent_env.cli.commands.runs:runs", "List and inspect past runs."),
    "plugin": (
        "agent_env.cli.commands.plugin:plugin",
        "List, show, check (and add, remove, create) plugins.",
    ),
    "config": ("agent_env.cli.commands.config:config", "Show the configuration in effect."),
    "sandbox": ("agent_env.cli.commands.sandbox:sandbox", "List and clean up sandboxes."),
    "completion": ("agent_env.cli.commands.completion:completion", "Print shell completion."),
    # issue 19: checks (`init` comes with agentenv-scaffold, `cache` with agentenv-caches)
    "check": ("agent_env.cli.commands.check:check", "Validate a bundle without running it."),
}

EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130

#: Commands that handle orphaned sandboxes themselves: `run --resume` adopts its own first,
#: `sandbox list` shows them, `sandbox prune` reaps them.
SELF_REAPING_COMMANDS = frozenset({"run", "sandbox"})

#: Commands that end the console script's start-up pause of the garbage collector themselves
#: (`agent_env.cli.startup.resume_collector`), once their own set-up is done: `run` when the
#: trials start. Every other command resumes it before its callback runs.
RESUMES_COLLECTOR_ITSELF = frozenset({"run"})

_verbose = False


ASKS_HELP = "agent_env.asks_help"


class RootGroup(LazyGroup):
    """The root group: kernel commands plus the ones plugins add through a hook."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        for name, (path, short_help) in KERNEL_COMMANDS.items():
            self.add_lazy_command(name, path, short_help)
        self._plugins_added = False

    def _add_plugin_commands(self) -> None:
        if not self._plugins_added:
            self._plugins_added = True
            from agent_env.plugins import get_plugin_manager

            get_plugin_manager().register_commands(self)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._add_plugin_commands()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self._add_plugin_commands()
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        # Seen here, before the group callback runs: asking a subcommand for help must not
        # reap (nor pay for the imports reaping needs).
        ctx.meta[ASKS_HELP] = any(arg in ctx.help_option_names for arg in args[1:])
        name, command, rest = super().resolve_command(ctx, args)
        if name not in RESUMES_COLLECTOR_ITSELF:
            resume_collector()
        return name, command, rest

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        global _verbose
        _verbose = False
        _setup_logging()
        notices.reset()
        try:
            rv = super().main(args, prog_name or "agent-env", complete_var, False, **extra)
            code = rv if isinstance(rv, int) else 0
        except click.exceptions.Abort as exc:
            interrupted = isinstance(exc.__cause__, KeyboardInterrupt)
            click.echo("Interrupted." if interrupted else "Aborted.", err=True)
            code = EXIT_INTERRUPTED if interrupted else EXIT_ERROR
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            code = EXIT_INTERRUPTED
        except click.ClickException as exc:
            exc.show()
            code = exc.exit_code
        except Exception as exc:
            code = report_error(exc)
        sys.exit(code)


def report_error(exc: BaseException) -> int:
    """Print `Error: ...` (the traceback too with `-v`) and return the exit code."""
    from agent_env.errors import AgentEnvError

    if _verbose:
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    if isinstance(exc, AgentEnvError):
        click.echo(f"Error: {exc}", err=True)
    else:
        hint = "" if _verbose else "; rerun with -v for the traceback"
        click.echo(f"Error: unexpected {type(exc).__name__}: {exc} (a bug{hint})", err=True)
    return EXIT_ERROR


def _reap_orphans() -> None:
    """Tear down sandboxes left by agent-env processes that died (one listdir when none)."""
    from agent_env.paths import home
    from agent_env.sandboxes.leases import has_leases

    if not has_leases(home()):
        return
    from agent_env.sandboxes.manager import reap_orphans_now

    try:
        reaped, problems = reap_orphans_now()
    except Exception as exc:  # reaping must never stop the command the user asked for
        problems, reaped = [f"reaping orphaned sandboxes failed: {exc}"], []
    if reaped:
        click.echo(
            f"reaped {len(reaped)} sandbox(es) left by agent-env processes that died: "
            + ", ".join(reaped),
            err=True,
        )
    for problem in problems:
        click.echo(f"agent-env: warning: {problem}", err=True)


def _setup_logging() -> None:
    import logging

    class StderrHandler(logging.StreamHandler):
        """Writes to `sys.stderr` as it is when a record comes (a test runner swaps it per
        command), not to the stream of the first command."""

        @property  # type: ignore[override]
        def stream(self) -> Any:
            return sys.stderr

        @stream.setter
        def stream(self, value: Any) -> None:
            pass

    logger = logging.getLogger("agent_env")
    if not logger.handlers:
        handler = StderrHandler()
        handler.setFormatter(logging.Formatter("agent-env: warning: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.WARNING)
        logger.propagate = False


def _set_verbose(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    global _verbose
    _verbose = _verbose or value


def _no_plugins(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        from agent_env.plugins import get_plugin_manager

        get_plugin_manager().disable_entry_points()


def _disable_plugins(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> None:
    if value:
        from agent_env.plugins import get_plugin_manager

        for name in value:
            get_plugin_manager().disable(name)


def build_cli() -> RootGroup:
    """A fresh root group (the console script uses one; `cli_runner` makes one per invocation)."""

    @click.group(
        cls=RootGroup,
        context_settings={"help_option_names": ["-h", "--help"]},
        epilog="Exit codes: 0 ok, 1 error, 2 usage error, 130 interrupted, 143 terminated.",
    )
    @click.version_option(
        __version__, "--version", prog_name="agent-env", message="%(prog)s %(version)s"
    )
    @click.option(
        "-v",
        "--verbose",
        is_flag=True,
        is_eager=True,
        expose_value=False,
        callback=_set_verbose,
        help="Show tracebacks for errors.",
    )
    @click.option(
        "--no-plugins",
        is_flag=True,
        is_eager=True,
        expose_value=False,
        callback=_no_plugins,
        help="Load only the built-in plugins.",
    )
    @click.option(
        "--disable-plugin",
        metavar="NAME",
        multiple=True,
        is_eager=True,
        expose_value=False,
        callback=_disable_plugins,
        help="Skip the plugin (or distribution) NAME; repeatable.",
    )
    @click.pass_context
    def cli(ctx: click.Context) -> None:
        """agent-env: build, deploy and run agentic environments and the tasks that grade agents."""
        if ctx.invoked_subcommand not in SELF_REAPING_COMMANDS and not ctx.meta.get(ASKS_HELP):
            _reap_orphans()

    return cli


cli = build_cli()
