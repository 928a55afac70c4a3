"""Reads the notes env through the gateway: the groceries note exists with the list, and the
note that was there before is still there."""

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
            titles = json.loads(_text(await session.call_tool("list_notes", {})))
            body = ""
            if "groceries" in titles:
                body = _text(await session.call_tool("read_note", {"title": "groceries"}))
    items = [i.strip().lower() for i in body.replace("\n", ",").split(",") if i.strip()]
    return [
        {"id": "saved", "result": "groceries" in titles, "description": f"notes now: {titles}"},
        {
            "id": "items",
            "result": {"milk", "eggs", "bread"} <= set(items),
            "description": f"groceries note body: {body!r}",
        },
        {
            "id": "kept",
            "result": "draft" in titles,
            "description": "the existing 'draft' note is kept",
        },
    ]


def verify(mcp_url):
    return asyncio.run(_check(mcp_url))
