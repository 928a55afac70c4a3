"""Key names: W3C UI Events `key` values (`Enter`, `Control`, `a`, ` `), matched without regard
to case for named keys, with the hints an agent needs when it writes `ctrl` or `Control+s`."""

from __future__ import annotations

import difflib

from agentenv_protocol.computer.errors import InvalidArgument

MODIFIERS = (
    "Alt",
    "AltGraph",
    "CapsLock",
    "Control",
    "Fn",
    "Meta",
    "NumLock",
    "ScrollLock",
    "Shift",
    "Super",
    "Hyper",
    "Symbol",
)
NAMED = (
    *MODIFIERS,
    "Enter",
    "Tab",
    "Backspace",
    "Delete",
    "Escape",
    "Insert",
    "Home",
    "End",
    "PageUp",
    "PageDown",
    "ArrowUp",
    "ArrowDown",
    "ArrowLeft",
    "ArrowRight",
    "ContextMenu",
    "PrintScreen",
    "Pause",
    "Clear",
    "Help",
    "AudioVolumeUp",
    "AudioVolumeDown",
    "AudioVolumeMute",
    "MediaPlayPause",
    "MediaStop",
    "MediaTrackNext",
    "MediaTrackPrevious",
    "BrowserBack",
    "BrowserForward",
    "BrowserRefresh",
    "BrowserHome",
    *(f"F{n}" for n in range(1, 25)),
)
_BY_LOWER = {name.lower(): name for name in NAMED}
#: Names agents often write for a W3C key.
ALIASES = {
    "ctrl": "Control",
    "control_l": "Control",
    "cmd": "Meta",
    "command": "Meta",
    "win": "Meta",
    "windows": "Meta",
    "super_l": "Meta",
    "option": "Alt",
    "opt": "Alt",
    "esc": "Escape",
    "return": "Enter",
    "enter_key": "Enter",
    "del": "Delete",
    "bksp": "Backspace",
    "backspace_key": "Backspace",
    "ins": "Insert",
    "up": "ArrowUp",
    "down": "ArrowDown",
    "left": "ArrowLeft",
    "right": "ArrowRight",
    "pgup": "PageUp",
    "pgdn": "PageDown",
    "pageup": "PageUp",
    "pagedown": "PageDown",
    "space": " ",
    "spacebar": " ",
    "menu": "ContextMenu",
    "printscreen": "PrintScreen",
    "prtsc": "PrintScreen",
}
SPLIT_HINT = "one key per entry: keys is a list, such as ['Control', 's']"
NAMED_HINT = "named keys are W3C UI Events key values, such as Enter"


def canonical(key: object) -> str:
    """The W3C spelling of `key`; InvalidArgument with a hint when it is none."""
    if not isinstance(key, str) or key == "":
        raise InvalidArgument(
            f"a key is a W3C key value (a non-empty string), got {key!r}", hint=NAMED_HINT
        )
    if len(key) == 1:
        return key
    found = _BY_LOWER.get(key.lower())
    if found is not None:
        return found
    message = f"{key!r} is not a W3C key value"
    alias = ALIASES.get(key.lower())
    if alias is not None:
        raise InvalidArgument(message, hint=f"did you mean {alias}?")
    if "+" in key or "-" in key.strip("-"):
        raise InvalidArgument(message, hint=SPLIT_HINT)
    close = difflib.get_close_matches(key.lower(), list(_BY_LOWER), n=1, cutoff=0.75)
    if close:
        raise InvalidArgument(message, hint=f"did you mean {_BY_LOWER[close[0]]}?")
    raise InvalidArgument(message, hint=NAMED_HINT)


def canonical_all(keys: list, *, what: str = "keys") -> list[str]:
    if not isinstance(keys, list) or not keys:
        raise InvalidArgument(f"{what} is a non-empty list of W3C key values")
    return [canonical(k) for k in keys]
