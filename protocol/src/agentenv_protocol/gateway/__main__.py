"""Run a gateway as its own process: `python -m agentenv_protocol.gateway --env echo=http://127.0.0.1:18765`.

The admin token comes from `--admin-token` or `AGENTENV_GATEWAY_TOKEN` (generated and printed
to stderr otherwise); `--role-token ROLE=TOKEN` binds agent tokens to roles.
"""

from __future__ import annotations

import argparse
import os
import sys

BACKLOG = 4096


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentenv_protocol.gateway", description=__doc__
    )
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=URL", help="an environment to front"
    )
    parser.add_argument("--host", default=os.environ.get("MCP_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("MCP_PORT", "0") or 0))
    parser.add_argument("--name", default="gateway")
    parser.add_argument("--admin-token", default=os.environ.get("AGENTENV_GATEWAY_TOKEN"))
    parser.add_argument("--role-token", action="append", default=[], metavar="ROLE=TOKEN")
    parser.add_argument("--namespacing", action="store_true", help="expose tools as <env>__<tool>")
    parser.add_argument("--trajectory", help="append the JSONL call log to this file")
    args = parser.parse_args(argv)

    envs, tokens = {}, {}
    for item in args.env:
        name, sep, url = item.partition("=")
        if not sep or not name or not url:
            parser.error(f"--env expects NAME=URL, got {item!r}")
        envs[name] = url
    for item in args.role_token:
        role, sep, token = item.partition("=")
        if not sep or not role or not token:
            parser.error(f"--role-token expects ROLE=TOKEN, got {item!r}")
        tokens[token] = role
    if not envs:
        parser.error("give at least one --env NAME=URL")

    import uvicorn

    from agentenv_protocol.gateway.app import Gateway

    gateway = Gateway(
        envs,
        name=args.name,
        tokens=tokens,
        admin_token=args.admin_token,
        namespacing=args.namespacing,
        trajectory=args.trajectory,
    )
    if not args.admin_token:
        print(f"agentenv gateway admin token: {gateway.admin_token}", file=sys.stderr, flush=True)
    from agentenv_protocol.serving import uvicorn_options

    uvicorn.run(
        gateway,
        host=args.host,
        port=args.port,
        log_level="warning",
        backlog=BACKLOG,  # a burst of thousands of new connections waits, never gets dropped
        **uvicorn_options(app=gateway),  # with the hot path for tool calls
    )
    return 1 if gateway.startup_error else 0


if __name__ == "__main__":
    sys.exit(main())
