"""A scope that SIGINT/SIGTERM cancel, for commands whose clean-up must still run: the first
signal cancels the work (clean-up then runs shielded inside it), later ones only say so."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable

import click

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _err(message: str) -> None:
    click.echo(message, err=True)


async def guarded(
    main: Callable[[list[int]], Awaitable[int]], *, default: int = 1
) -> tuple[int, list[int]]:
    """(what `main(caught)` returned, the signals caught). `caught` fills as signals arrive, so
    `main` can tell an interruption from a failure; `default` when a signal cancelled `main`."""
    caught: list[int] = []
    loop = asyncio.get_running_loop()
    work = asyncio.ensure_future(main(caught))

    def on_signal(signum: int) -> None:
        if not caught:
            _err(f"\n{signal.Signals(signum).name}: stopping; tearing down sandboxes...")
            work.cancel()
        else:
            _err("still tearing down sandboxes (each teardown has a time limit)...")
        caught.append(signum)

    for signum in _SIGNALS:
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        return await work, caught
    except asyncio.CancelledError:
        if not caught or not work.cancelled():  # cancelled from outside, not by a signal
            raise
        return default, caught
    finally:
        for signum in _SIGNALS:
            loop.remove_signal_handler(signum)
