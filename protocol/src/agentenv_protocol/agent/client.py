"""A client for A2A agents that speak the AgentEnv extensions: read the card, configure the
agent (`agent-config`), hand it MCP servers (`mcp-config`), send a message (blocking
`message/send`), and fetch the trajectory of a task (`trajectory`).

Every call has a timeout; an unreachable agent or a malformed answer raises `A2AError`."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from agentenv_protocol import _http
from agentenv_protocol.agent.types import (
    AGENT_CARD_PATH,
    AGENT_CONFIG_URI,
    LEGACY_CARD_PATH,
    MCP_CONFIG_URI,
    TRAJECTORY_URI,
)


class A2AError(Exception):
    """The agent could not be reached, refused a call, or answered with something unusable."""


class A2AClient:
    """Talks to the agent at `base_url`; use as `async with A2AClient(url) as agent:`."""

    def __init__(
        self, base_url: str, *, timeout: float = 30.0, connect_timeout: float = 5.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = _http.client(timeout, connect=connect_timeout)
        self._card: dict[str, Any] | None = None

    async def __aenter__(self) -> A2AClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def _request(self, method: str, url: str, what: str, **kwargs: Any) -> Any:
        try:
            response = await self.http.request(method, url, **kwargs)
        except httpx.TimeoutException as e:
            raise A2AError(
                f"agent at {self.base_url} did not answer {what} in time ({type(e).__name__})"
            ) from None
        except httpx.TransportError as e:
            raise A2AError(
                f"agent at {self.base_url} is unreachable ({what}): {type(e).__name__}: {e}"
            ) from None
        if response.status_code >= 400:
            raise A2AError(
                f"agent at {self.base_url} refused {what}: HTTP {response.status_code}: "
                f"{response.text[:300]}"
            )
        try:
            return response.json()
        except ValueError:
            raise A2AError(
                f"agent at {self.base_url} answered {what} with non-JSON: {response.text[:200]!r}"
            ) from None

    async def card(self) -> dict[str, Any]:
        """The agent card (`/.well-known/agent-card.json`, else the older `agent.json`)."""
        if self._card is None:
            try:
                self._card = await self._request("GET", self.base_url + AGENT_CARD_PATH, "its card")
            except A2AError as first:
                if "HTTP 404" not in str(first):
                    raise
                self._card = await self._request(
                    "GET", self.base_url + LEGACY_CARD_PATH, "its card"
                )
            if not isinstance(self._card, dict) or "capabilities" not in self._card:
                raise A2AError(f"agent at {self.base_url} serves a card without capabilities")
        return self._card

    async def wait_ready(self, timeout: float = 60.0, interval: float = 0.1) -> dict[str, Any]:
        """Poll the card until it answers; A2AError naming the last problem after `timeout`."""
        import anyio

        last: Exception | None = None
        with anyio.move_on_after(timeout):
            while True:
                try:
                    return await self.card()
                except A2AError as e:
                    last = e
                await anyio.sleep(interval)
        raise A2AError(f"agent at {self.base_url} did not come up within {timeout:g}s: {last}")

    async def supports(self, uri: str) -> bool:
        return any(
            e.get("uri") == uri for e in (await self.card())["capabilities"].get("extensions") or []
        )

    async def _operation(self, uri: str, name: str, payload: dict[str, Any] | None = None) -> Any:
        card = await self.card()
        ext = next(
            (e for e in card["capabilities"].get("extensions") or [] if e.get("uri") == uri), None
        )
        if ext is None:
            raise A2AError(f"agent {card.get('name')!r} does not support the extension {uri}")
        params = ext.get("params") or {}
        spec = (params.get("methods") or {}).get(name)
        if not isinstance(spec, dict):
            raise A2AError(f"agent {card.get('name')!r}: extension {uri} has no operation {name!r}")
        path = spec.get("endpoint") or params.get("endpoint")
        if not isinstance(path, str):
            raise A2AError(f"agent {card.get('name')!r}: extension {uri} names no endpoint")
        method = spec.get("method", "POST").upper()
        kwargs = {"json": payload} if method != "GET" else {"params": payload or None}
        return await self._request(method, self.base_url + path, f"{uri} {name}", **kwargs)

    async def configure(self, **settings: Any) -> dict[str, Any]:
        """Set the agent-config fields the card lists as `supported` (model, system_prompt,
        ...); the others are not sent, and a card that lists none gets nothing. Returns what
        sent when the agent does not echo its config."""
        from agentenv_protocol.agent.extensions import negotiated_config

        body = negotiated_config(await self.card(), settings)
        if not body:
            return {}
        answer = await self._operation(AGENT_CONFIG_URI, "set", body)
        config = answer.get("config") if isinstance(answer, dict) else None
        return config if isinstance(config, dict) else body

    async def add_mcp_server(
        self, url: str, *, name: str | None = None, headers: dict[str, str] | None = None
    ) -> str:
        payload: dict[str, Any] = {"url": url}
        if name:
            payload["name"] = name
        if headers:
            payload["headers"] = headers
        return (await self._operation(MCP_CONFIG_URI, "add", payload))["name"]

    async def remove_mcp_server(self, name: str) -> None:
        await self._operation(MCP_CONFIG_URI, "remove", {"name": name})

    async def send(
        self,
        text: str,
        *,
        context_id: str | None = None,
        timeout: float = 600.0,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Blocking `message/send`; returns the A2A task (status.state, status.message.parts)."""
        card = await self.card()
        url = card.get("url") or (self.base_url + "/a2a")
        if not url.startswith(self.base_url):  # the card names its own host; we reach it here
            from urllib.parse import urlsplit

            url = self.base_url + urlsplit(url).path
        message: dict[str, Any] = {
            "kind": "message",
            "messageId": uuid.uuid4().hex,
            "role": "user",
            "parts": [{"kind": "text", "text": text}],
        }
        if context_id:
            message["contextId"] = context_id
        if metadata:
            message["metadata"] = metadata
        body = {
            "jsonrpc": "2.0",
            "id": uuid.uuid4().hex,
            "method": "message/send",
            "params": {"message": message, "configuration": {"blocking": True}},
        }
        answer = await self._request(
            "POST", url, "message/send", json=body, timeout=httpx.Timeout(timeout, connect=5.0)
        )
        if not isinstance(answer, dict):
            raise A2AError(f"agent at {self.base_url} answered message/send with {answer!r}")
        if "error" in answer:
            raise A2AError(f"agent at {self.base_url} refused message/send: {answer['error']}")
        task = answer.get("result")
        if not isinstance(task, dict) or not isinstance(task.get("status"), dict):
            raise A2AError(
                f"agent at {self.base_url} answered message/send without a task: {str(answer)[:300]}"
            )
        return task

    async def trajectory(self, task_id: str) -> list[dict[str, Any]]:
        if not await self.supports(TRAJECTORY_URI):
            return []
        return list(
            (await self._operation(TRAJECTORY_URI, "get", {"task_id": task_id})).get("trajectory")
            or []
        )


def task_text(task: dict[str, Any]) -> str:
    """The text of a task's final message (or of its last artifact)."""
    message = (task.get("status") or {}).get("message") or {}
    texts = [p.get("text", "") for p in message.get("parts") or [] if p.get("kind") == "text"]
    if not texts:
        for artifact in task.get("artifacts") or []:
            texts = [
                p.get("text", "") for p in artifact.get("parts") or [] if p.get("kind") == "text"
            ] or texts
    return "\n".join(texts)


def task_data(task: dict[str, Any], key: str) -> Any:
    """The value under `key` in the data parts of a task's final message, if any."""
    message = (task.get("status") or {}).get("message") or {}
    for part in message.get("parts") or []:
        if (
            part.get("kind") == "data"
            and isinstance(part.get("data"), dict)
            and key in part["data"]
        ):
            return part["data"][key]
    return None
