"""A conformance probe for any computer driver (ours or not): it drives the driver's tools and
extensions the way an agent does, checks what comes back (frames, crops, clicks that land, keys,
drags, the extensions) and reports each check as passed, failed or unverified, with what it saw.

`checks.Probe` holds the checks; it talks to a driver through a small client interface
(`declares`, `params`, `invoke`, `run`, `rpc`, `add_file`, `session`), so a test can stand in for
the driver with a stub that answers the way a driver outside our base class might.
"""

from __future__ import annotations

from agentenv_protocol.computer.conformance.checks import CheckResult, Probe

__all__ = ["CheckResult", "Probe"]
