"""What a driver class is checked for when it is defined: its required operations and whole
groups, its features (buttons, click count, wait limit, keys, display modes) and that it
doesn't replace a member the base class uses itself. Mistakes fail at import, not mid-run."""

from __future__ import annotations

from agentenv_protocol.computer import keys as key_names
from agentenv_protocol.computer import operations as ops
from agentenv_protocol.computer.errors import InvalidArgument

KNOWN_BUTTONS = ("left", "right", "middle", "back", "forward")
MIN_WAIT_MS = 60_000
#: Members of the base class a driver is meant to set or override.
HOOKS = frozenset(
    {
        "__init__",
        "caller_identity",
        "ready_checks",
        "served_tools",
        "served_extensions",
        "served_operations",
        "extension_params",
        "declared_extensions",
        "on_tool_call",
        "buttons",
        "max_click_count",
        "max_drag_points",
        "max_wait_ms",
        "display_modes",
        "keys",
        "supports",
        "tool_access",
    }
)


def check_operations(cls: type) -> None:
    have = ops.declared(cls)
    missing = [op for op in ops.REQUIRED if op not in have]
    if missing:
        raise TypeError(
            f"{cls.__name__} is missing required operation(s): {', '.join('@' + m for m in missing)}"
        )
    for group, members in ops.GROUPS.items():
        absent = [op for op in members if op not in have]
        if absent and len(absent) < len(members):
            raise TypeError(
                f"{cls.__name__}: the {group} group needs all of "
                f"{', '.join('@' + m for m in members)}; missing {', '.join('@' + m for m in absent)}"
            )
    if bool(getattr(cls, "display_modes", ())) != ("set_display" in have):
        raise TypeError(f"{cls.__name__}: display_modes and @set_display come together")


def check_features(cls: type) -> None:
    name = cls.__name__
    buttons = tuple(getattr(cls, "buttons", ()))
    if "left" not in buttons or not set(buttons) <= set(KNOWN_BUTTONS):
        raise TypeError(
            f"{name}: buttons include left and are among {list(KNOWN_BUTTONS)}, got {list(buttons)}"
        )
    for attr, low in (("max_click_count", 1), ("max_drag_points", 2), ("max_wait_ms", MIN_WAIT_MS)):
        value = getattr(cls, attr)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise TypeError(f"{name}: {attr} is an integer of at least {low}, got {value!r}")
    keys = getattr(cls, "keys", None)
    if keys is not None:
        for key in keys:
            try:
                spelled = key_names.canonical(key)
            except InvalidArgument as e:
                raise TypeError(f"{name}: keys: {e.message}") from None
            if spelled != key:
                raise TypeError(
                    f"{name}: keys are W3C key values in their W3C case: {key!r} is {spelled!r}"
                )


def check_members(cls: type, base: type) -> None:
    """A subclass member that would replace one the base class uses itself is refused."""
    own = {n for klass in base.__mro__ if klass is not object for n in vars(klass)}
    for name in vars(cls):
        if name in HOOKS or (name.startswith("__") and name.endswith("__")):
            continue
        if name in own or name.startswith(("_computer", "computer_")):
            raise TypeError(f"{cls.__name__} redefines {name}, which {base.__name__} uses itself")
