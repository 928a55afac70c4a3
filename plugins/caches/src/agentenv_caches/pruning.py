"""What `agent-env cache list|prune` computes over the cache kinds plugins register
(`agent_env.caches.CacheKind`): which kinds a `--kind` names, the entries to remove and what
happened to each, and the sizes and ages the listing prints."""

from __future__ import annotations

import time
from typing import Any

from agent_env.caches import CacheKind, LiveUse


def parse_age(text: str) -> float:
    """Seconds in `30s`, `15m`, `12h`, `7d`, `2w` (ValueError with the accepted forms)."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    text = text.strip().lower()
    number, unit = text[:-1], text[-1:]
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if unit not in units or value < 0:
        raise ValueError(f"{text!r} is not an age; use a number and a unit: 30s, 15m, 12h, 7d, 2w")
    return value * units[unit]


def human_size(size: int) -> str:
    """`size` bytes as people read it (`512 B`, `1.5 KB`, ..., GB at most)."""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def age(seconds_since_epoch: float, now: float | None = None) -> str:
    """How long ago `seconds_since_epoch` was (`40s ago`, `3h ago`, `2d ago`)."""
    seconds = max(0.0, (now or time.time()) - seconds_since_epoch)
    for unit, span in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= span:
            return f"{seconds / span:.0f}{unit} ago"
    return f"{seconds:.0f}s ago"


def select(plugins: Any, names: tuple[str, ...] = ()) -> list[CacheKind]:
    """The registered kinds named (all when none); PluginError with a did-you-mean."""
    registry = plugins.cache_kinds
    chosen = list(dict.fromkeys(names)) or sorted(registry)
    return [registry.get(name)() for name in chosen]


def prune(
    kinds: list[CacheKind],
    live: LiveUse,
    *,
    older_than: float | None = None,
    dry_run: bool = False,
    now: float | None = None,
) -> list[dict[str, Any]]:
    """One row per entry considered: `action` is removed / would remove / kept (in use) /
    failed; entries used within `older_than` seconds are left out. Nothing in use is touched."""
    now = time.time() if now is None else now
    rows = []
    for kind in kinds:
        try:
            entries = kind.entries()
        except Exception as e:  # a daemon that is down: the other kinds are still pruned
            reason = f"cannot list: {type(e).__name__}: {e}"
            rows.append(
                {"kind": kind.type, "name": "*", "size": 0, "action": "failed", "reason": reason}
            )
            continue
        for entry in entries:
            if older_than is not None and now - entry.last_used < older_than:
                continue
            row = {"kind": entry.kind, "name": entry.name, "size": entry.size}
            try:
                if kind.in_use(entry, live):
                    row["action"] = "kept"
                    row["reason"] = "in use by a live run"
                elif dry_run:
                    row["action"] = "would remove"
                else:
                    kind.remove(entry)
                    row["action"] = "removed"
            except Exception as e:  # one entry failing must not stop the others
                row["action"] = "failed"
                row["reason"] = f"{type(e).__name__}: {e}"
            rows.append(row)
    return rows
