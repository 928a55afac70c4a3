"""Scores what the policy left on the scratchpad (read through the run's gateway): one line was
written, and it mentions notes (a random policy's line does only some of the time)."""

import asyncio
import json

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def _lines(mcp_url):
    async with streamable_http_client(mcp_url) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("read", {})
    return json.loads("".join(getattr(c, "text", "") for c in result.content))


def verify(mcp_url):
    lines = asyncio.run(_lines(mcp_url))
    text = " ".join(lines)
    return [
        {"id": "one-line", "result": len(lines) == 1, "description": f"{len(lines)} lines"},
        {"id": "mentions-notes", "result": "notes" in text.split(), "description": text[:200]},
    ]
