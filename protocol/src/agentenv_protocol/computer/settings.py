"""A computer driver's settings: defaults for coordinate spaces, keyboard timing, the input
queue, command output and the data plane's paths. Mutable: the spaces and keyboard extensions
change them at run time."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import PurePosixPath

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


#: The environment variable a deploy passes a driver's settings in, as one JSON object.
SETTINGS_ENV = "AGENTENV_COMPUTER_SETTINGS"
_NON_NEGATIVE = ("tap_hold_ms", "type_delay_ms", "exec_output_bytes")
_POSITIVE = ("queue_wait_s", "max_hold_ms", "default_norm_scale")


def _check(settings: ComputerSettings) -> None:
    if settings.default_space not in SPACES:
        raise ValueError(f"default_space is 'frame' or 'norm', got {settings.default_space!r}")
    for name in (*_NON_NEGATIVE, *_POSITIVE):
        value = getattr(settings, name)
        low_ok = value >= 0 if name in _NON_NEGATIVE else value > 0
        if isinstance(value, bool) or not isinstance(value, int | float) or not low_ok:
            bound = "at least 0" if name in _NON_NEGATIVE else "over 0"
            raise ValueError(f"{name} is a number {bound}, got {value!r}")
    for path in settings.data_paths:
        parts = PurePosixPath(path).parts if isinstance(path, str) else ()
        if not parts or path.startswith("/") or ".." in parts or str(PurePosixPath(path)) != path:
            raise ValueError(f"data_paths: {path!r} is not a normalized path relative to the home")


def load_settings(environ: Mapping[str, str] | None = None) -> ComputerSettings:
    """The settings a deploy passed in `SETTINGS_ENV` (defaults when it is unset); a value that
    isn't JSON, an unknown key or a value out of range is a ValueError naming the variable."""
    environ = os.environ if environ is None else environ
    raw = environ.get(SETTINGS_ENV)
    if not raw:
        return ComputerSettings()
    try:
        values = json.loads(raw)
        if not isinstance(values, dict):
            raise ValueError(f"a JSON object, not {type(values).__name__}")
        known = {f.name for f in attrs.fields(ComputerSettings)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown settings {unknown}; known: {sorted(known)}")
        settings = ComputerSettings(**values)
        _check(settings)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{SETTINGS_ENV}: {e}") from None
    return settings
