"""Contract suites: plain test classes a backend's tests subclass, providing a fixture or two.

Store suites (`stores`): `DocumentStoreContract`, `VersionedEntitiesContract`,
`ObjectStoreContract`, `SecretStoreContract`, `ImageStoreContract`. Sandbox providers:
`SandboxProviderContract` (`sandbox`). Step types: `StepTypeContract` (`steps`). Names load
on first use, so importing this is cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "DocumentStoreContract": "stores",
    "VersionedEntitiesContract": "stores",
    "ObjectStoreContract": "stores",
    "SecretStoreContract": "stores",
    "ImageStoreContract": "stores",
    "SandboxProviderContract": "sandbox",
    "StepTypeContract": "steps",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
