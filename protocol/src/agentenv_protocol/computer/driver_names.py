"""Names a computer driver module imports besides the operation marks: two more refusals
(`DeviceUnavailable`, `DeliveryFailed`), `Image` (raw pixels a `@capture` may return),
`ReadyCheck` (one line of a driver's readiness) and `@computer_driver` (its name and the
platforms it supports). Each is a thin face over the SDK's own pieces."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from agentenv_protocol.computer.errors import ComputerError

#: Raw pixel layouts `Image` takes, as Pillow's raw decoder names them.
RAW_MODES = {"RGB": ("RGB", "RGB"), "RGBA": ("RGBA", "RGBA"), "BGRA": ("RGB", "BGRX")}


class DeviceUnavailable(ComputerError):
    """The screen or input device can't be reached now (no display, a dropped connection):
    nothing was sent; retry once it is back."""

    code_name, http_status, retry = "device_unavailable", 503, True


class DeliveryFailed(ComputerError):
    """Input failed on its way to the device: some of it may have arrived (`applied` is
    `unknown`), so it is not sent again."""

    code_name, http_status = "delivery_failed", 502

    def __init__(self, message: str, *, hint: str | None = None, data: Any = None) -> None:
        super().__init__(message, hint=hint, applied="unknown", data=data)


class Image:
    """Raw pixels (`mode` RGB, RGBA or BGRA, row by row) as the Pillow image the frames keep:
    `Image(width, height, data, mode)` returns a `PIL.Image.Image`."""

    def __new__(cls, width: int, height: int, data: bytes, mode: str = "RGB") -> Any:  # type: ignore[misc]
        from PIL import Image as PILImage

        if mode not in RAW_MODES:
            raise ValueError(f"Image mode {mode!r}: expected one of {sorted(RAW_MODES)}")
        target, raw = RAW_MODES[mode]
        expected = width * height * len(mode)
        if len(data) != expected:
            raise ValueError(
                f"Image {width}x{height} {mode}: {len(data)} bytes of pixels, expected {expected}"
            )
        return PILImage.frombytes(target, (width, height), bytes(data), "raw", raw)


@attrs.frozen
class ReadyCheck:
    """One check of a driver's readiness: its name, whether it passed, and what it saw."""

    name: str
    ok: bool
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


def computer_driver(name: str | None = None, *, supports: list | None = None) -> Callable:
    """Class decorator: the driver's card name (unless `ENVIRONMENT_NAME` gives one) and the
    platforms it supports (`[{"os": {"type": "linux", "display": ["x11"]}, "arch": [...]}]`)."""
    from agentenv_protocol.authoring import environment_card
    from agentenv_protocol.computer.driver import ComputerDriverEnvironment

    def decorate(cls: type) -> type:
        if not (isinstance(cls, type) and issubclass(cls, ComputerDriverEnvironment)):
            raise TypeError(
                f"@computer_driver: {cls!r} is not a subclass of ComputerDriverEnvironment"
            )
        if supports is not None:
            cls.supports = list(supports)  # type: ignore[attr-defined]
        return environment_card(name=name)(cls) if name else cls

    return decorate
