"""Probe an env's MCP endpoint with the official `mcp` client (1.x or 2.x, whichever is installed)
and print what it answered as JSON: `python mcp_probe.py URL [CALLS_JSON] [ROLE]`, CALLS_JSON a
list of `[tool, arguments]`. Used by the README-sample tests and to run the same probe against the
existing SDK in its own venv."""

from __future__ import annotations

import asyncio
import json
import sys

import httpx
from mcp import ClientSession

try:  # mcp 2.x
    from mcp.client.streamable_http import streamable_http_client as _connect

    _NEW = True
except ImportError:  # mcp 1.x
    from mcp.client.streamable_http import streamablehttp_client as _connect  # type: ignore

    _NEW = False


def _dump(model) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def probe(url: str, calls: list, role: str | None = None) -> dict:
    headers = {"AgentEnv-Role": role} if role else {}
    if _NEW:
        http = httpx.AsyncClient(headers=headers, timeout=30)
        transport = _connect(url, http_client=http)
    else:
        transport = _connect(url, headers=headers)
    async with transport as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = [_dump(t) for t in (await session.list_tools()).tools]
            results = []
            for name, arguments in calls:
                try:
                    results.append(_dump(await session.call_tool(name, arguments)))
                except Exception as e:  # the client refusing an answer is a finding too
                    results.append({"client_error": f"{type(e).__name__}: {e}"})
    return {"tools": tools, "calls": results}


if __name__ == "__main__":
    calls = json.loads(sys.argv[2]) if len(sys.argv) > 2 else []
    role = sys.argv[3] if len(sys.argv) > 3 else None
    print(json.dumps(asyncio.run(probe(sys.argv[1], calls, role)), indent=1, sort_keys=True))
