"""Read what a driver class declares on each platform it supports, where the driver's own
dependencies (an X library, a screen grabber) aren't installed: a module no finder finds is
imported as an inert stub, the class is read without running its __init__, and each platform's
card (tools, extensions, features) comes back as JSON.

    python -m agentenv_protocol.computer._declare FOLDER FILE CLASS
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import sys
import types
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class _StubType(type):
    """Every attribute, call and item of a stub class is the stub class again (dunders aside)."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Stub

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return _Stub

    def __getitem__(cls, key: Any) -> Any:
        return _Stub


class _Stub(metaclass=_StubType):
    """What a name from a module that isn't installed stands for."""


class _StubModule(types.ModuleType):
    """A module that isn't installed: each of its names is `_Stub`."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Stub


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The last finder: a module no other finder finds becomes a `_StubModule`."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def declare(folder: Path | str, file: str, class_name: str) -> dict:
    """{name, supports, platforms: [{platform, provides, tools, features}]} of the driver class
    `class_name` in `folder/file`; ValueError when it is no driver or names no platform."""
    from agentenv_protocol.computer.card import COMPUTER
    from agentenv_protocol.computer.driver import ComputerDriverEnvironment
    from agentenv_protocol.computer.platform import supported

    folder = Path(folder)
    finder = _StubFinder()
    sys.path.insert(0, str(folder))
    sys.meta_path.append(finder)
    try:
        spec = importlib.util.spec_from_file_location(
            f"_agentenv_driver_{uuid.uuid4().hex}", folder / file
        )
        if spec is None or spec.loader is None:
            raise ValueError(f"{file} can't be read as a Python module")
        module = importlib.util.module_from_spec(spec)
        with contextlib.redirect_stdout(sys.stderr):
            spec.loader.exec_module(module)
    finally:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
    cls = vars(module).get(class_name)
    if not (isinstance(cls, type) and issubclass(cls, ComputerDriverEnvironment)) or isinstance(
        cls, _StubType
    ):
        raise ValueError(f"{file} has no ComputerDriverEnvironment subclass named {class_name}")
    supports = list(cls.supports or [])
    if not supports:
        raise ValueError(
            f"{class_name} declares no platform: name them with @computer_driver(supports=[...])"
        )
    platforms = []
    name = None
    for entry in supports:
        for platform in supported(entry):
            card = cls.declaration(platform)
            name = card.name
            extensions = card.capabilities.extensions or []
            computer = next((e.params or {} for e in extensions if e.uri == COMPUTER), {})
            platforms.append(
                {
                    "platform": platform.as_dict(),
                    "provides": [e.uri for e in extensions]
                    + list(card.capabilities.operations or []),
                    "tools": [t.name for t in card.capabilities.tools or []],
                    "features": {k: v for k, v in computer.items() if k != "platform"},
                }
            )
    return {"name": name, "supports": supports, "platforms": platforms}


def main(argv: Sequence[str] | None = None) -> int:
    """Print the declaration as JSON (the driver's own prints go to stderr); exit 1 with the
    reason on stderr when it can't be read."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 3:
        print(
            "usage: python -m agentenv_protocol.computer._declare FOLDER FILE CLASS",
            file=sys.stderr,
        )
        return 2
    try:
        declared = declare(Path(args[0]), args[1], args[2])
    except Exception as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(json.dumps(declared, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
