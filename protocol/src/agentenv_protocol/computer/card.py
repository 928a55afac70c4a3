"""The computer's card vocabulary: its extension URIs, the tools each group brings, and what
the card advertises about the driver (platform, buttons, limits, spaces)."""

from __future__ import annotations

COMPUTER = "urn:agentenv:computer/v1"
COMPUTER_READY = "urn:agentenv:computer-ready/v1"
COMPUTER_POINTER = "urn:agentenv:computer-pointer/v1"
COMPUTER_KEYBOARD = "urn:agentenv:computer-keyboard/v1"
COMPUTER_SPACES = "urn:agentenv:computer-spaces/v1"
COMPUTER_DISPLAY = "urn:agentenv:computer-display/v1"
COMPUTER_EXEC = "urn:agentenv:computer-exec/v1"

MINIMUM_TOOLS = (
    "computer_screenshot",
    "computer_click",
    "computer_drag",
    "computer_scroll",
    "computer_type",
    "computer_key",
    "computer_wait",
)
GROUP_TOOLS = {
    "pointer": (
        "computer_pointer_move",
        "computer_pointer_down",
        "computer_pointer_up",
        "computer_pointer_position",
        "computer_pointer_list",
    ),
    "keyboard": ("computer_keyboard_down", "computer_keyboard_up"),
}
GROUP_EXTENSIONS = {"pointer": COMPUTER_POINTER, "keyboard": COMPUTER_KEYBOARD}
#: The tools that take a point, whose descriptions name the default space.
POINT_TOOLS = (
    "computer_screenshot",
    "computer_click",
    "computer_drag",
    "computer_scroll",
    "computer_pointer_move",
    "computer_pointer_down",
)
