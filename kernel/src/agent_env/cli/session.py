"""`with_session`: run a command's coroutine with an open `Session` (the config, the stores,
the plugins and the sandbox manager), closed however the coroutine ends."""

from __future__ import annotations

from typing import Any


async def with_session(fn: Any, *args: Any) -> Any:
    """`await fn(session, *args)` with a session opened for it and closed after."""
    from agent_env.engine.run import Session

    session = await Session.open()
    try:
        return await fn(session, *args)
    finally:
        await session.close()
