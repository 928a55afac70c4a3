"""The console script's start-up pause of the cyclic garbage collector: `pause_collector` as
the script starts, `resume_collector` once the command gets to its work (the root group
before a command's callback; `run` as its trials start)."""

from __future__ import annotations

import gc

#: Set while the console script holds the cyclic garbage collector paused (`pause_collector`).
_collector_paused = False


def pause_collector() -> None:
    """Pause the cyclic garbage collector for the command's start-up.

    Start-up builds some 30,000 long-lived objects (modules, classes, registries, parsed
    bundles) and almost no garbage: the collector traversed them about 80 times during
    `agent-env run hello`, a fourteenth of its CPU, to free a few hundred objects. Only the
    console script pauses it (an embedding process keeps its own collector as it is); it
    resumes before anything that can run long (`resume_collector`)."""
    global _collector_paused
    if gc.isenabled():
        gc.disable()
        _collector_paused = True


def resume_collector() -> None:
    """End the start-up pause: what start-up built moves to the collector's permanent
    generation (`gc.freeze`, as CPython's docs advise for a disable-early process), so the
    collections of a long command never traverse it again, and the collector runs as usual.
    Idempotent; nothing when nothing is paused."""
    global _collector_paused
    if _collector_paused:
        _collector_paused = False
        gc.freeze()
        gc.enable()
