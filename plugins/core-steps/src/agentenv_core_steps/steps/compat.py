"""Fields the existing product's step types define that ours accept but do not use."""

from __future__ import annotations

from typing import Any

import attrs

try:  # the kernel's declaration (the loader warns once per ignored field)
    from agent_env.models import compat_ignored
except ImportError:  # pragma: no cover - a kernel without it: same metadata, no warning

    def compat_ignored(reason: str, *, default: Any = None) -> Any:  # type: ignore[misc]
        return attrs.field(default=default, metadata={"agent_env.compat_ignored": reason})


__all__ = ["compat_ignored"]
