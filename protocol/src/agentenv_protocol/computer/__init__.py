"""The computer-driver SDK: subclass `ComputerDriverEnvironment`, mark your platform's
operations (`@capture`, `@click`, ...), and serve screenshot/act tools, frames, the input queue,
the computer extensions and the data plane through this SDK's environment server.

Modules: `driver` (the base class), `tools` / `group_tools` (the MCP tools), `frames`,
`spaces`, `queue`, `keys`, `operations` (the marks and `Display`), `results`, `errors`,
`settings`, `platform`, `card` (URIs and tool groups), `extensions`, `dataplane`, `linux` and
`runtime` (running commands), `conformance` (a probe of any driver's behaviour).
"""

from __future__ import annotations

from agentenv_protocol.computer.driver import ComputerDriverEnvironment, computer_driver
from agentenv_protocol.computer.errors import (
    ComputerError,
    DeliveryFailed,
    DeviceUnavailable,
    InputBusy,
    Internal,
    InvalidArgument,
    OutOfBounds,
    StaleFrame,
    Unsupported,
)
from agentenv_protocol.computer.operations import (
    Display,
    capture,
    click,
    display,
    drag,
    key_down,
    key_up,
    pointer_down,
    pointer_move,
    pointer_position,
    pointer_up,
    press,
    run_in_session,
    scroll,
    set_display,
    type_text,
)
from agentenv_protocol.computer.platform import Platform
from agentenv_protocol.computer.results import Effect, ExecResult, Image, ReadyCheck
from agentenv_protocol.computer.settings import SETTINGS_ENV, ComputerSettings

__all__ = [
    "SETTINGS_ENV",
    "DeliveryFailed",
    "DeviceUnavailable",
    "Image",
    "ReadyCheck",
    "computer_driver",
    "ComputerDriverEnvironment",
    "ComputerError",
    "ComputerSettings",
    "Display",
    "Effect",
    "ExecResult",
    "InputBusy",
    "Internal",
    "InvalidArgument",
    "OutOfBounds",
    "Platform",
    "StaleFrame",
    "Unsupported",
    "capture",
    "click",
    "display",
    "drag",
    "key_down",
    "key_up",
    "pointer_down",
    "pointer_move",
    "pointer_position",
    "pointer_up",
    "press",
    "run_in_session",
    "scroll",
    "set_display",
    "type_text",
]
