"""Staged into the sandbox by `run_code` and run as `python3 runner.py RUN_DIR ENTRYPOINT FILE`:
calls `ENTRYPOINT(input)` from FILE with `RUN_DIR/input.json` and writes `RUN_DIR/output.json`.
Uses only the standard library, so any Python 3 in the sandbox can run it."""

from __future__ import annotations  # annotations stay unevaluated on an old Python 3

import asyncio
import importlib.util
import inspect
import json
import os
import sys
from collections.abc import Awaitable
from typing import Any


async def _awaited(result: Awaitable[Any]) -> Any:
    return await result


def main() -> int:
    run_dir, entrypoint, script_file = sys.argv[1:4]
    sys.path.insert(0, os.path.dirname(os.path.join(run_dir, script_file)))
    sys.path.insert(0, run_dir)
    with open(os.path.join(run_dir, "input.json")) as f:
        data = json.load(f)
    spec = importlib.util.spec_from_file_location(
        "agentenv_run_code", os.path.join(run_dir, script_file)
    )
    if spec is None or spec.loader is None:
        print(f"{script_file} is not a Python file", file=sys.stderr)
        return 2
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function = getattr(module, entrypoint, None)
    if not callable(function):
        print(f"{script_file} defines no function {entrypoint!r}", file=sys.stderr)
        return 2
    result = function(data)
    if inspect.isawaitable(result):
        result = asyncio.run(_awaited(result))
    with open(os.path.join(run_dir, "output.json"), "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
