"""Whose fault a failed exchange with the run's gateway was (docs/failures.md): the gateway runs
in the runner's process, so a connection to it that cannot be made or breaks is transport
between our own processes (`infrastructure`), while a call it took and did not answer in time
waited on an env (`env`)."""

from __future__ import annotations


def gateway_failure_class(error: BaseException) -> str | None:
    """`infrastructure` when `error` (or a cause, or a member of an exception group) is a
    connection to the gateway that could not be made or kept; `env` when it is a read timeout
    (the env behind the gateway did not answer); None when it is no transport failure."""
    import httpx

    from agentenv_protocol.errors import EnvUnavailable

    seen: set[int] = set()
    todo: list[BaseException] = [error]
    found: str | None = None
    while todo:
        exc = todo.pop()
        if id(exc) in seen:
            continue
        seen.add(id(exc))
        if isinstance(exc, (httpx.ConnectTimeout, httpx.PoolTimeout)):
            return "infrastructure"
        if isinstance(exc, httpx.TimeoutException):
            found = "env"
        elif isinstance(exc, (httpx.TransportError, ConnectionError)):
            return "infrastructure"
        elif isinstance(exc, EnvUnavailable) and found is None:
            found = "infrastructure"  # unless a cause says it was a read timeout
        if isinstance(exc, BaseExceptionGroup):
            todo.extend(exc.exceptions)
        todo.extend(e for e in (exc.__cause__, exc.__context__) if e is not None)
    return found
