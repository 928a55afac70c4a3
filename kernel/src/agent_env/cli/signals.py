"""A scope that SIGINT/SIGTERM cancel, for commands whose clean-up must still run: the first
signal cancels the work (clean-up then runs shielded inside it), later ones only say so."""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable

import anyio
import click


def _err(message: str) -> None:
    click.echo(message, err=True)


async def guarded(
    main: Callable[[list[int]], Awaitable[int]], *, default: int = 1
) -> tuple[int, list[int]]:
    """(what `main(caught)` returned, the signals caught). `caught` fills as signals arrive, so
    `main` can tell an interruption from a failure; `default` when a signal cancelled `main`."""
    caught: list[int] = []
    code = default
    error: Exception | None = None
    async with anyio.create_task_group() as tg:
        scope = anyio.CancelScope()

        async def watch() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for signum in signals:
                    if not caught:
                        _err(
                            f"\n{signal.Signals(signum).name}: stopping; tearing down sandboxes..."
                        )
                    else:
                        _err("still tearing down sandboxes (each teardown has a time limit)...")
                    caught.append(signum)
                    scope.cancel()

        tg.start_soon(watch)
        try:
            with scope:
                code = await main(caught)
        except Exception as exc:  # re-raised below, outside the task group's exception group
            error = exc
        finally:
            tg.cancel_scope.cancel()
    if error is not None:
        raise error
    return code, caught
