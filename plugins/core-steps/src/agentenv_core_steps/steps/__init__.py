"""The built-in step types, one module each (`agentenv_core_steps.catalog` lists them); a class
is importable from here too (`from agentenv_core_steps.steps import RunCode`), loaded on use."""

from typing import Any


def __getattr__(name: str) -> Any:
    from agent_env.registry import import_target
    from agentenv_core_steps.catalog import STEP_TYPES

    for target in STEP_TYPES.values():
        if target.endswith(f":{name}"):
            return import_target(target)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
