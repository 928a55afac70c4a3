"""A computer driver's settings: defaults for coordinate spaces, keyboard timing, the input
queue, command output and the data plane's paths. Mutable: the spaces and keyboard extensions
change them at run time."""

from __future__ import annotations

import attrs

SPACES = ("frame", "norm")


@attrs.define(kw_only=True)
class ComputerSettings:
    """Per-deploy settings of a computer driver (see docs/compatibility.md, computer)."""

    #: The coordinate space of a point when a call names none: frame pixels or the norm grid.
    default_space: str = "frame"
    #: The top of the norm grid (0..default_norm_scale over the frame) when a call names none.
    default_norm_scale: int = 1000
    #: How long an input call waits for earlier input before it is refused `input_busy`.
    queue_wait_s: float = 10.0
    #: How long a key of `computer_key` is held down.
    tap_hold_ms: int = 50
    #: The delay between typed characters a backend may honour.
    type_delay_ms: int = 10
    #: The keyboard layout (only `us` is served).
    layout: str = "us"
    #: Keys held by `computer_keyboard_down` are released after this long.
    max_hold_ms: int = 10_000
    #: The cap on each output stream of a `computer-exec` command.
    exec_output_bytes: int = 1_000_000
    #: Paths under the home that `data/get` returns.
    data_paths: list[str] = attrs.field(factory=list)


def load_settings(values: dict | None = None) -> ComputerSettings:
    """Settings from a mapping (a deploy's `[computer]` table); an unknown key is refused with
    the known ones named."""
    values = dict(values or {})
    known = {f.name for f in attrs.fields(ComputerSettings)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown computer settings {unknown}; known: {sorted(known)}")
    return ComputerSettings(**values)
