"""The probe's view of a driver at a URL: its card, its extensions (by the endpoints the card
advertises), its commands (computer-exec), its data plane and MCP sessions per role."""

from __future__ import annotations

import base64
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx

from agentenv_protocol._http import tls_context
from agentenv_protocol.client_helpers import get_card, invoke_extension, mcp_path
from agentenv_protocol.computer.card import COMPUTER_EXEC
from agentenv_protocol.constants import DATA_OBJECTS_EXTENSION_URI, RPC_PATH
from agentenv_protocol.context import ROLE_HEADER


class Driver:
    """A driver served at `url` (use `await Driver.connect(url, timeout_s)`)."""

    def __init__(self, url: str, card: dict, timeout_s: float) -> None:
        self.url = url.rstrip("/")
        self.card = card
        self.timeout_s = timeout_s

    @classmethod
    async def connect(cls, url: str, timeout_s: float) -> Driver:
        return cls(url, await get_card(url.rstrip("/"), timeout=int(max(timeout_s, 1))), timeout_s)

    @property
    def extensions(self) -> list[str]:
        return [e.get("uri") for e in (self.card.get("capabilities") or {}).get("extensions") or []]

    def declares(self, uri: str) -> bool:
        return uri in self.extensions

    def params(self, uri: str) -> dict:
        for entry in (self.card.get("capabilities") or {}).get("extensions") or []:
            if entry.get("uri") == uri:
                return dict(entry.get("params") or {})
        return {}

    async def invoke(self, uri: str, method: str, params: dict | None = None) -> Any:
        return await invoke_extension(
            self.url, self.card, uri, params, timeout=int(max(self.timeout_s, 1)), method=method
        )

    async def run(self, *argv: str, timeout_s: float = 30) -> dict:
        """A command through computer-exec."""
        body = {
            "argv": list(argv),
            "request_id": f"probe-{uuid.uuid4().hex}",
            "timeout_s": timeout_s,
        }
        return await self.invoke(COMPUTER_EXEC, "run", body)

    async def rpc(self, method: str, params: dict | None = None) -> dict:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        async with httpx.AsyncClient(timeout=self.timeout_s, verify=tls_context()) as http:
            return (await http.post(self.url + RPC_PATH, json=body)).json()

    async def add_file(self, path: str, data: bytes) -> dict:
        part = {
            "kind": "file",
            "file": {"bytes": base64.b64encode(data).decode()},
            "metadata": {DATA_OBJECTS_EXTENSION_URI: {"path": path}},
        }
        return await self.rpc("data/add", {"parts": [part]})

    @contextlib.asynccontextmanager
    async def session(self, role: str | None = None) -> AsyncIterator[Any]:
        """An initialized MCP client session, as `role` when given."""
        from mcp import ClientSession
        from mcp.client.streamable_http import streamablehttp_client

        headers = {ROLE_HEADER: role} if role else None
        async with (
            streamablehttp_client(self.url + mcp_path(self.card), headers=headers) as (
                read,
                write,
                _,
            ),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session
