"""A conformance probe for any computer driver (ours or not): it drives the driver's tools and
extensions the way an agent does, checks what comes back (frames, crops, clicks that land, keys,
drags, the extensions) and reports each check as passed, failed or unverified, with what it saw.

`checks.Probe` holds the checks; it talks to a driver through a small client interface
(`declares`, `params`, `invoke`, `run`, `rpc`, `add_file`, `session`), so a test can stand in for
the driver with a stub that answers the way a driver outside our base class might.
`run_probe(url, level)` (or `python -m agentenv_protocol.computer.conformance URL`) runs it
against a driver served at a URL and returns a `ProbeReport`.
"""

from __future__ import annotations

from agentenv_protocol.computer.conformance.checks import CheckResult, Probe
from agentenv_protocol.computer.conformance.probe import run_probe
from agentenv_protocol.computer.conformance.report import ProbeReport

__all__ = ["CheckResult", "Probe", "ProbeReport", "run_probe"]
