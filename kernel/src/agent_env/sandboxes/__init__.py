"""Sandboxes: the built-in `local` provider (the `local` package), the `SandboxManager` that creates
sandboxes through providers and keeps a lease file per sandbox (`manager.py`, `leases.py`), and
process helpers that survive pid reuse (`procs.py`). Nothing heavy is imported here.
"""
