"""Reads /tmp/hello.txt on the env's computer through the gateway: the agent's typing wrote it."""

import asyncio

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def _check(mcp_url):
    async with streamable_http_client(mcp_url) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            text = ""
            for _ in range(50):  # the shell runs the command a moment after Enter
                result = await session.call_tool("read_file", {"path": "/tmp/hello.txt"})
                text = "".join(getattr(c, "text", "") for c in result.content)
                if text:
                    break
                await asyncio.sleep(0.1)
    return [
        {
            "id": "file-written",
            "result": text.strip() == "hello from the desktop",
            "description": f"/tmp/hello.txt holds {text.strip()!r}",
        }
    ]


def verify(mcp_url):
    return asyncio.run(_check(mcp_url))
