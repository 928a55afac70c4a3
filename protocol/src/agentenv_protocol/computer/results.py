"""What driver operations answer besides `Display`: a captured image, the effect of an input,
a command's result and a ready check."""

from __future__ import annotations

from typing import NamedTuple

import attrs

#: Modes of `Image.data`: encoded files, or raw pixels row by row.
ENCODED_MODES = ("png", "jpeg")
RAW_MODES = {
    "RGB": ("RGB", "RGB"),
    "RGBA": ("RGBA", "RGBA"),
    "BGRA": ("RGB", "BGRX"),
    "BGRX": ("RGB", "BGRX"),
    "BGR": ("RGB", "BGR"),
    "L": ("L", "L"),
}


@attrs.frozen
class Image:
    """A capture as bytes: `mode` 'png' / 'jpeg' (an encoded file) or a raw pixel layout
    ('RGB', 'RGBA', 'BGRA', 'BGRX', 'BGR', 'L'), `width` by `height` pixels. `@capture` may
    return one of these, a PIL image, or encoded bytes."""

    width: int
    height: int
    data: bytes
    mode: str = "png"


@attrs.frozen(kw_only=True)
class Effect:
    """What an input operation observed it did (optional): reported under `effect`."""

    pointer_moved: bool | None = None

    def as_dict(self) -> dict:
        return {k: v for k, v in attrs.asdict(self).items() if v is not None}


class ExecResult(NamedTuple):
    """A command's outcome as `@run_in_session` returns it: raw bytes, the base class caps and
    decodes them."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False


@attrs.frozen
class ReadyCheck:
    """One readiness check: the base class checks the display and a capture; a driver's
    `ready_checks()` adds its own (a session logged in, an app up)."""

    name: str
    ok: bool
    detail: str = ""

    def as_dict(self) -> dict:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}
