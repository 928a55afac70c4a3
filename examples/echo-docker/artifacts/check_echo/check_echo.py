"""Checks the echo env through the gateway's MCP endpoint with the `mcp` client."""

import asyncio
import json

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def _check(mcp_url):
    async with streamable_http_client(mcp_url) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            echoed = await session.call_tool("echo", {"text": "hello"})
            added = await session.call_tool("add", {"a": 2, "b": 40})
    text = "".join(getattr(c, "text", "") for c in echoed.content)
    total = json.loads("".join(getattr(c, "text", "") for c in added.content))
    return [
        {
            "id": "tools",
            "result": {"echo", "add"} <= tools,
            "description": f"tools listed: {sorted(tools)}",
        },
        {
            "id": "echo",
            "result": not echoed.isError and text == "hello",
            "description": f"echo('hello') -> {text!r}",
        },
        {"id": "add", "result": total == {"sum": 42}, "description": f"add(2, 40) -> {total}"},
    ]


def verify(mcp_url):
    return asyncio.run(_check(mcp_url))
