"""The refusals a computer driver answers with: each an `AgentEnvError` with its wire code, so a
tool answers `isError` with `{code, message, retryable, applied, hint}` and an extension answers
its HTTP status with the same fields."""

from __future__ import annotations

from typing import Any

from agentenv_protocol.errors import AgentEnvError, Applied


class ComputerError(AgentEnvError):
    """Base of the computer's refusals; subclasses fix the code, status and retryability."""

    code_name = "internal"
    http_status = 500
    retry = False

    def __init__(
        self, message: str, *, hint: str | None = None, applied: Applied = "no", data: Any = None
    ) -> None:
        super().__init__(
            self.code_name,
            message,
            retryable=self.retry,
            applied=applied,
            hint=hint,
            status=self.http_status,
            data=data,
        )


class InvalidArgument(ComputerError):
    """An argument out of its range or of the wrong shape: nothing was sent."""

    code_name, http_status = "invalid_argument", 400


class OutOfBounds(ComputerError):
    """A point or region outside its frame or its coordinate range (never clamped)."""

    code_name, http_status = "out_of_bounds", 400


class StaleFrame(ComputerError):
    """The frame named (or the caller's latest) can't place a point: absent, evicted, or taken
    before the display changed. Take a new screenshot and retry."""

    code_name, http_status, retry = "stale_frame", 409, True


class Unsupported(ComputerError):
    """Something this computer doesn't have (a button, a key, a layout)."""

    code_name, http_status = "unsupported", 501


class InputBusy(ComputerError):
    """Earlier input held the queue past the wait limit; nothing was sent."""

    code_name, http_status, retry = "input_busy", 503, True


class DeviceUnavailable(ComputerError):
    """The computer isn't ready (its display or capture fails a ready check): retry later."""

    code_name, http_status, retry = "device_unavailable", 503, True


class DeliveryFailed(ComputerError):
    """An input operation raised: some of the input may have reached the screen."""

    code_name, http_status = "delivery_failed", 500

    def __init__(self, message: str, **kwargs: Any) -> None:
        kwargs.setdefault("applied", "unknown")
        super().__init__(message, **kwargs)


class Internal(ComputerError):
    """The driver's own operation failed or answered something that isn't its contract."""

    code_name, http_status = "internal", 500


def operation_failed(op: str, error: BaseException, *, applied: Applied = "unknown") -> Internal:
    """The error of a driver operation that raised: names the operation and the exception."""
    return Internal(f"@{op} failed: {type(error).__name__}: {error}", applied=applied)
