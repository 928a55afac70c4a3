"""`agent-env up`: serve the explorer over the configured stores until Ctrl-C.

Exit codes: 0 stopped with Ctrl-C or SIGTERM; 1 an error (no config, port in use, bad
`[explorer]` settings); 2 a usage error."""

from __future__ import annotations

import json
import secrets
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import click

NO_CONFIG = (
    "no .agentenv/config.toml found in {cwd} or above. Create one to select your backends "
    "(an empty file keeps every local default: `mkdir -p .agentenv && touch "
    ".agentenv/config.toml`), or point AGENT_ENV_CONFIG at an existing config file."
)


def _err(message: str) -> None:
    click.echo(message, err=True)


def _listen(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound before the URL is printed: the URL then names the
    port the system chose for `--port 0`, and a port in use fails before anything is shown."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise click.ClickException(
            f"cannot listen on {host}:{port} ({exc.strerror}): another explorer may be "
            "running; pick another port with --port or [explorer] port"
        ) from None
    return sock


def _log_dir(stores: Any, cwd: Path) -> Path:
    """Where the output of runs started from the explorer goes: `<agent-env home>/explorer-runs`."""
    home = getattr(stores.documents, "home", None)
    return Path(home) / "explorer-runs" if home else cwd / ".agentenv" / "explorer-runs"


@click.command("up")
@click.option("--host", help="Address to listen on (default: [explorer] host, 127.0.0.1).")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    help="Port (default: [explorer] port, 8234; 0: a free one, printed in the URL).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the explorer in a browser.")
@click.option("--json", "as_json", is_flag=True, help="Print the URL and stores as one JSON line.")
def up(host: str | None, port: int | None, open_browser: bool, as_json: bool) -> None:
    """Start the explorer: runs with pass rates, trials with steps, trajectories, tool calls,
    verifier rows and logs, the stored tasks, envs and artifacts with their versions; start
    and cancel runs. Needs .agentenv/config.toml in this folder or above (empty is fine).

    Listens on 127.0.0.1:8234 unless told otherwise. Every request needs a token ([explorer]
    token, else a fresh one printed in the URL; opening that URL keeps it in a cookie), on
    loopback too: agents in local sandboxes share the machine's loopback."""
    from agent_env import results

    cwd = Path.cwd()
    path = results.config_path(cwd)
    if path is None:
        raise click.ClickException(NO_CONFIG.format(cwd=cwd))
    # uvicorn stops the server (and the runs started here) on SIGINT/SIGTERM, then raises the
    # signal again: that second one is the documented exit 0, not an interruption
    signal.signal(signal.SIGTERM, _stopped)
    try:
        anyio.run(_serve, cwd, path, host, port, open_browser, as_json)
    except KeyboardInterrupt:
        pass
    except BaseExceptionGroup as group:
        # with --open the server runs in a task group, which wraps the re-raised signal
        _, rest = group.split((KeyboardInterrupt, SystemExit))
        if rest is not None:
            raise rest from None


def _stopped(signum: int, frame: Any) -> None:
    raise SystemExit(0)


async def _serve(
    cwd: Path, path: Path, host: str | None, port: int | None, open_browser: bool, as_json: bool
) -> None:
    import uvicorn

    from agent_env import results
    from agentenv_explorer.app import create_app

    stores = await results.open_configured_stores(cwd)
    try:
        settings: dict[str, Any] = await results.config_table("explorer", stores, cwd)
        host = host or str(settings.get("host") or "127.0.0.1")
        port = int(settings.get("port") or 8234) if port is None else port
        # a token on loopback too: every local process reaches a loopback port, sandboxed
        # agents included (they share the host's network namespace), and this server reads
        # the stores (tasks with their solutions, every run) and starts runs
        token = settings.get("token") or secrets.token_urlsafe(24)
        sock = _listen(host, port)
    except BaseException:
        await stores.close()
        raise
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    info = {
        "url": url,
        "config": str(path),
        "document_store": type(stores.documents).__name__,
        "object_store": type(stores.objects).__name__,
    }
    if as_json:
        click.echo(json.dumps(info))
    else:
        _err(f"config: {path}")
        _err(f"stores: documents {info['document_store']}, objects {info['object_store']}")
        click.echo(f"explorer: {url}")
    sys.stdout.flush()
    app = create_app(
        stores,
        cwd=cwd,
        log_dir=_log_dir(stores, cwd),
        bind_host=host,
        allowed_hosts=settings.get("allowed_hosts") or (),
        token=token,
    )

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            app.state.explorer.stopping = True  # live event streams end within half a second
            super().handle_exit(sig, frame)

    server = Server(
        uvicorn.Config(app, host=host.strip("[]"), port=port, log_level="warning", lifespan="on")
    )
    try:
        await _run_server(server, sock, url if open_browser else None)
    finally:
        sock.close()


async def _run_server(server: Any, sock: socket.socket, open_url: str | None) -> None:
    """Serve on `sock` until stopped; with `open_url`, open it in a browser once serving."""
    if open_url is None:
        await server.serve(sockets=[sock])
        return
    import webbrowser

    async def opener() -> None:
        while not server.started:
            await anyio.sleep(0.05)
        webbrowser.open(open_url)

    async with anyio.create_task_group() as tg:
        tg.start_soon(opener)
        await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()
