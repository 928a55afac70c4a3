"""Checks the mailbox through the gateway: the customer's email came in during the agent's turn
(by the task's trigger) and the agent answered it within working hours, 09:00-17:00 Mon-Fri in
America/New_York, on the env clock."""

import asyncio
import json
from datetime import datetime
from zoneinfo import ZoneInfo

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

ZONE = ZoneInfo("America/New_York")


def _local(stamp):
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(ZONE)


def _in_hours(local):
    return local.weekday() < 5 and 9 <= local.hour < 17


async def _read(mcp_url):
    async with streamable_http_client(mcp_url) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("list_sent", {})
            return json.loads("".join(getattr(c, "text", "") for c in result.content))


def verify(mcp_url):
    mail = asyncio.run(_read(mcp_url))
    inbox = {m["email_id"]: m for m in mail["inbox"]}
    replies = [r for r in mail["sent"] if r["email_id"] == "order-42"]
    received = inbox.get("order-42")
    answered = replies[0] if replies else None
    return [
        {
            "id": "email-arrived",
            "result": received is not None,
            "description": f"order-42 received at {received and _local(received['received_at'])}",
        },
        {
            "id": "answered",
            "result": answered is not None and len(answered["body"]) > 0,
            "description": f"{len(replies)} reply(ies) to order-42",
        },
        {
            "id": "within-working-hours",
            "result": answered is not None and _in_hours(_local(answered["sent_at"])),
            "description": f"replied at {answered and _local(answered['sent_at'])} New York time",
        },
    ]
