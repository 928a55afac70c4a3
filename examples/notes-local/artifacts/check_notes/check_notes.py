"""Checks the notes env through the gateway: the reset emptied it, and a note round-trips."""

import asyncio
import json

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def _text(result):
    return "".join(getattr(c, "text", "") for c in result.content)


async def _check(mcp_url):
    async with streamable_http_client(mcp_url) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            before = json.loads(_text(await session.call_tool("list_notes", {})))
            added = await session.call_tool("add_note", {"title": "todo", "body": "ship it"})
            body = _text(await session.call_tool("read_note", {"title": "todo"}))
            after = json.loads(_text(await session.call_tool("list_notes", {})))
    return [
        {"id": "reset", "result": before == [], "description": f"notes after reset_env: {before}"},
        {
            "id": "round-trip",
            "result": not added.isError and body == "ship it",
            "description": f"read_note('todo') -> {body!r}",
        },
        {"id": "listed", "result": after == ["todo"], "description": f"notes at the end: {after}"},
    ]


def verify(mcp_url):
    return asyncio.run(_check(mcp_url))
