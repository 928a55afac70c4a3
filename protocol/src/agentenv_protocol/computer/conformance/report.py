"""A probe's report: every check with its section, status and what it saw, and the verdict."""

from __future__ import annotations

from collections import Counter

import attrs

from agentenv_protocol.computer.conformance.checks import CheckResult


@attrs.frozen(kw_only=True)
class ProbeReport:
    """The outcome of `run_probe`: passed when no check failed."""

    driver: str
    url: str
    level: str
    checks: list[CheckResult]

    @property
    def passed(self) -> bool:
        return not any(c.status == "failed" for c in self.checks)

    def counts(self) -> dict[str, int]:
        found = Counter(c.status for c in self.checks)
        return {status: found.get(status, 0) for status in ("passed", "failed", "unverified")}

    def as_dict(self) -> dict:
        return {
            "driver": self.driver,
            "url": self.url,
            "level": self.level,
            "passed": self.passed,
            "counts": self.counts(),
            "checks": [attrs.asdict(c) for c in self.checks],
        }

    def lines(self) -> list[str]:
        rows = [
            f"{c.section}  {c.status:<10}  {c.name}" + (f": {c.detail}" if c.detail else "")
            for c in self.checks
        ]
        counts = ", ".join(f"{n} {s}" for s, n in self.counts().items())
        verdict = "passed" if self.passed else "FAILED"
        return [*rows, f"{self.driver} at {self.url}, {self.level}: {verdict} ({counts})"]
