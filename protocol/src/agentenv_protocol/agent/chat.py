"""A minimal client for OpenAI-compatible chat completions (vLLM, SGLang, llama.cpp server,
OpenAI, a LiteLLM proxy) over httpx: tool definitions in, one assistant message out.

429 and 5xx answers and connection failures are retried with exponential backoff (honouring
`Retry-After` up to `max_backoff`); what still fails raises a `ChatError` subclass whose
`failure_class` says whose fault it is.
"""

from __future__ import annotations

import json
import os
import random
from typing import Any

import anyio
import attrs
import httpx

from agentenv_protocol import _http
from agentenv_protocol.agent.types import Usage

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class ChatError(Exception):
    """A chat completion failed; `failure_class` is `agent` or `infrastructure`."""

    failure_class = "infrastructure"


class ModelNotConfigured(ChatError):
    """No endpoint: neither the agent's config, `[model] base_url` nor `LITELLM_BASE_URL`."""


class ModelUnavailable(ChatError):
    """The endpoint could not be reached or kept failing (after retries)."""


class MalformedModelResponse(ChatError):
    """The endpoint answered, but not with a chat completion we can use."""

    failure_class = "agent"


@attrs.frozen(kw_only=True)
class ChatReply:
    """The assistant message (`role`, `content`, optional `tool_calls`) and its usage."""

    message: dict[str, Any]
    usage: Usage
    finish_reason: str | None = None


def endpoint_from_env(
    base_url: str | None = None, api_key: str | None = None
) -> tuple[str | None, str | None]:
    """The explicit values, else `LITELLM_BASE_URL` / `LITELLM_API_KEY` (then `OPENAI_*`)."""
    base = base_url or os.environ.get("LITELLM_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
    key = api_key or os.environ.get("LITELLM_API_KEY") or os.environ.get("OPENAI_API_KEY")
    return base, key


def require_endpoint(base_url: str | None) -> str:
    """`base_url`, or `ModelNotConfigured` saying where an endpoint can be set."""
    if not base_url:
        raise ModelNotConfigured(
            "no model endpoint: set [model] base_url in .agentenv/config.toml, or "
            "LITELLM_BASE_URL (and LITELLM_API_KEY), or the agent's model_base_url"
        )
    return base_url


class ChatClient:
    """POSTs `{base_url}/chat/completions`; use as `async with ChatClient(url, key) as chat:`."""

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        connect_timeout: float = 5.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
    ) -> None:
        self.base_url = require_endpoint(base_url).rstrip("/")
        self.api_key = api_key
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = _http.client(timeout, connect=connect_timeout, headers=headers)

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            after = response.headers.get("retry-after")
            try:
                if after is not None:
                    return min(self.max_backoff, max(0.0, float(after)))
            except ValueError:
                pass
        return min(self.max_backoff, self.backoff * (2**attempt)) * (0.5 + random.random() / 2)

    async def complete(
        self,
        *,
        model: str | None,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        params: dict[str, Any] | None = None,
    ) -> ChatReply:
        """One completion. Raises `ModelUnavailable`, `MalformedModelResponse` or `ChatError`."""
        body: dict[str, Any] = {**(params or {}), "messages": messages}
        if model:
            body["model"] = model
        if tools:
            body["tools"] = tools
        url = self.base_url + "/chat/completions"
        last = ""
        for attempt in range(self.max_retries + 1):
            response = None
            try:
                response = await self.http.post(url, json=body)
            except httpx.TimeoutException as e:
                last = f"timed out ({type(e).__name__})"
            except httpx.TransportError as e:
                last = f"unreachable: {type(e).__name__}: {e}"
            if response is not None:
                if response.status_code < 400:
                    return self._parse(response)
                last = f"HTTP {response.status_code}: {response.text[:300]}"
                if response.status_code not in RETRY_STATUS:
                    raise ChatError(f"the model endpoint {url} refused the request: {last}")
            if attempt < self.max_retries:
                await anyio.sleep(self._delay(attempt, response))
        raise ModelUnavailable(
            f"the model endpoint {url} failed {self.max_retries + 1} times; last: {last}"
        )

    def _parse(self, response: httpx.Response) -> ChatReply:
        try:
            data = response.json()
        except ValueError:
            raise MalformedModelResponse(
                f"the model endpoint answered with something that is not JSON: {response.text[:200]!r}"
            ) from None
        try:
            choice = data["choices"][0]
            message = dict(choice["message"])
        except (KeyError, IndexError, TypeError):
            raise MalformedModelResponse(
                f"the model answer has no choices[0].message: {json.dumps(data)[:300]}"
            ) from None
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list) or any(
            not isinstance(c, dict) or not isinstance((c.get("function") or {}).get("name"), str)
            for c in calls
        ):
            raise MalformedModelResponse(
                f"the model answer has malformed tool_calls: {json.dumps(calls)[:300]}"
            )
        if message.get("content") is not None and not isinstance(message["content"], str):
            message["content"] = _flatten(message["content"])
        raw = data.get("usage") or {}
        usage = Usage(
            prompt_tokens=int(raw.get("prompt_tokens") or 0),
            completion_tokens=int(raw.get("completion_tokens") or 0),
            total_tokens=int(raw.get("total_tokens") or 0),
            model_calls=1,
        )
        return ChatReply(message=message, usage=usage, finish_reason=choice.get("finish_reason"))


def _flatten(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)
