"""What driver operations answer besides images: the effect of an input and a command's result."""

from __future__ import annotations

from typing import NamedTuple

import attrs


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
