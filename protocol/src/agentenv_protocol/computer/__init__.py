"""The computer-driver SDK: subclass `ComputerDriverEnvironment`, mark your platform's
operations (`@capture`, `@click`, ...), and serve screenshot/act tools, frames, the input queue,
the computer extensions and the data plane through this SDK's environment server.

Modules: `driver` (the base class), `tools` / `group_tools` (the MCP tools), `frames`,
`spaces`, `queue`, `keys`, `operations` (the marks and `Display`), `results`, `errors`,
`driver_names` (the refusals, `Image`, `ReadyCheck` and
`@computer_driver` a driver module imports), `settings`, `platform`, `card` (URIs and tool groups), `extensions`, `dataplane`, `linux` and
`runtime` (running commands), `conformance` (a probe of any driver's behaviour).
"""

from __future__ import annotations

from agentenv_protocol.computer.driver import ComputerDriverEnvironment
from agentenv_protocol.computer.driver_names import (
    DeliveryFailed,
    DeviceUnavailable,
    Image,
    ReadyCheck,
    computer_driver,
)
from agentenv_protocol.computer.errors import (
    ComputerError,
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
from agentenv_protocol.computer.results import Effect, ExecResult
from agentenv_protocol.computer.settings import ComputerSettings

__all__ = [
    "ComputerDriverEnvironment",
    "ComputerError",
    "ComputerSettings",
    "DeliveryFailed",
    "DeviceUnavailable",
    "Display",
    "Effect",
    "ExecResult",
    "Image",
    "InputBusy",
    "Internal",
    "InvalidArgument",
    "OutOfBounds",
    "Platform",
    "ReadyCheck",
    "StaleFrame",
    "Unsupported",
    "capture",
    "click",
    "computer_driver",
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
