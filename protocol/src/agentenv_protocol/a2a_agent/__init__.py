"""The existing AgentEnv SDK's agent-author names, as thin faces over `agentenv_protocol.agent`.

Names load on first use, so importing the package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

#: name -> the submodule that defines it (a submodule's own name maps to itself)
_EXPORTS = {
    "proxy": "proxy",
    "ProxyActionState": "proxy",
    "ProxyAgent": "proxy",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    loaded = importlib.import_module(f"{__name__}.{module}")
    value = loaded if name == module else getattr(loaded, name)
    globals()[name] = value
    return value
