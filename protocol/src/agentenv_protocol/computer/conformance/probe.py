"""`run_probe(url, level)`: connect to a driver and run the probe. `basic` needs nothing on the
computer (readiness, the card, frames, the extensions); `full` also stages the fixture app and
checks what input does to it."""

from __future__ import annotations

from agentenv_protocol.computer.conformance.checks import Probe
from agentenv_protocol.computer.conformance.client import Driver
from agentenv_protocol.computer.conformance.report import ProbeReport

LEVELS = ("basic", "full")
BASIC = (
    "_ready",
    "_card",
    "_frame",
    "_display",
    "_spaces",
    "_keyboard_settings",
    "_exec",
    "_tool_access",
)


async def run_probe(url: str, level: str = "basic", *, timeout_s: float = 30) -> ProbeReport:
    if level not in LEVELS:
        raise ValueError(f"level is one of {', '.join(LEVELS)}, got {level!r}")
    driver = await Driver.connect(url, timeout_s)
    async with driver.session() as session:
        probe = Probe(driver, session, timeout_s)
        if level == "full":
            await probe.full()
        else:
            sections = dict((name, section) for section, name in Probe.SECTIONS)
            for name in BASIC:
                await probe._guarded(sections[name], getattr(probe, name))
    return ProbeReport(
        driver=str(driver.card.get("name")), url=url, level=level, checks=list(probe.results)
    )
