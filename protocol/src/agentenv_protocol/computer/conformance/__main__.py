"""`python -m agentenv_protocol.computer.conformance URL [--level basic|full] [--json]`: probe a
computer driver; exit 0 when no check failed, 1 when one did, 2 when the driver can't be reached."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence

import httpx

from agentenv_protocol.computer.conformance.probe import LEVELS, run_probe
from agentenv_protocol.errors import ProtocolError


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentenv_protocol.computer.conformance",
        description="Probe a computer driver's tools and extensions.",
    )
    parser.add_argument(
        "url", help="the driver's base URL (its card is at /.well-known/agent-env.json)"
    )
    parser.add_argument(
        "--level",
        choices=LEVELS,
        default="basic",
        help="basic needs nothing on the computer; full stages the Tk fixture app",
    )
    parser.add_argument("--timeout", type=float, default=30, help="seconds per call (default 30)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    try:
        report = asyncio.run(run_probe(args.url, args.level, timeout_s=args.timeout))
    except (OSError, ValueError, httpx.HTTPError, ProtocolError) as e:
        print(f"conformance: {args.url}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.as_dict(), indent=1))
    else:
        print("\n".join(report.lines()))
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
