"""The existing SDK's module-level client helpers, under the same names and signatures (they are
re-exported from `agentenv_protocol.client`): fetch a card, drive the data plane, read a card's
extensions, tools and children, and invoke an extension from what the card advertises.

Cards are plain dicts here, as the existing helpers take them. Each call opens its own
connection; a loop that makes many calls should hold an `EnvClient` instead.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx

from agentenv_protocol._http import tls_verify
from agentenv_protocol.errors import rpc_error_from
from agentenv_protocol.types import (
    INTAKE_EXTENSION_URI,
    MCP_PATH,
    MCP_TRANSPORT,
    METHOD_ADD,
    METHOD_GET,
    METHOD_RESET,
    RPC_PATH,
    WELL_KNOWN_PATH,
    AddDataResponse,
    GetDataResponse,
    ResetDataResponse,
)

log = logging.getLogger(__name__)

INTERFACE_MANIFEST_PATH = "/agentenv/interface-manifest"


class ExtensionCallError(httpx.HTTPStatusError):
    """A non-2xx answer from an extension, with the fields the server sent (`code`, `detail`,
    `retryable`, `applied`, `hint`); a body without them leaves `code` None, `applied` unknown."""

    def __init__(self, response: httpx.Response) -> None:
        try:
            body = response.json()
        except ValueError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        error = error if isinstance(error, dict) else {}
        self.code: str | None = error.get("code")
        self.detail: str = str(error.get("message") or getattr(response, "reason_phrase", ""))
        self.retryable: bool = bool(error.get("retryable", False))
        self.applied: str = error.get("applied", "unknown")
        self.hint: str | None = error.get("hint")
        super().__init__(
            f"{response.status_code} {self.code or 'error'}: {self.detail}",
            request=response.request,
            response=response,
        )


async def _rpc(base_url: str, method: str, params: dict, timeout: float, verify: bool) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with httpx.AsyncClient(verify=tls_verify(verify)) as http:
        response = await http.post(f"{base_url}{RPC_PATH}", json=body, timeout=timeout)
        response.raise_for_status()
        answer = response.json()
    if "error" in answer:
        raise rpc_error_from(answer["error"], method=method)
    return answer["result"]


def _dumped(part: Any) -> Any:
    if hasattr(part, "model_dump"):
        return part.model_dump(mode="json", exclude_none=True)
    return part


async def reset_data(base_url: str, timeout: int = 30, verify: bool = True) -> ResetDataResponse:
    """`data/reset`; a JSON-RPC error raises the `RpcError` for its code (a RuntimeError)."""
    return ResetDataResponse.model_validate(await _rpc(base_url, METHOD_RESET, {}, timeout, verify))


async def add_data(
    base_url: str, parts: list, timeout: int = 120, verify: bool = True
) -> AddDataResponse:
    """`data/add` with `parts` (part models or their JSON)."""
    params = {"parts": [_dumped(p) for p in parts]}
    return AddDataResponse.model_validate(await _rpc(base_url, METHOD_ADD, params, timeout, verify))


async def get_data(
    base_url: str, timeout: int = 30, verify: bool = True, *, write_namespace: Any = None
) -> GetDataResponse:
    """`data/get`, handing the server a `write_namespace` grant when given."""
    params = {} if write_namespace is None else {"write_namespace": _dumped(write_namespace)}
    return GetDataResponse.model_validate(await _rpc(base_url, METHOD_GET, params, timeout, verify))


async def get_card(base_url: str, timeout: int = 10, verify: bool = True) -> dict:
    """The env's card as a dict; a non-2xx answer raises `httpx.HTTPStatusError`."""
    async with httpx.AsyncClient(verify=tls_verify(verify)) as http:
        response = await http.get(f"{base_url}{WELL_KNOWN_PATH}", timeout=timeout)
        response.raise_for_status()
        return response.json()


async def supports_v1(base_url: str, verify: bool = True) -> bool:
    """Whether the server serves a v1 card; a 404 (or any failure) means a legacy server."""
    try:
        await get_card(base_url, verify=verify)
        return True
    except httpx.HTTPStatusError as e:
        if e.response.status_code != 404:
            log.warning(
                "v1 probe %s: HTTP %s, treating as legacy", base_url, e.response.status_code
            )
        return False
    except Exception as e:
        log.warning("v1 probe %s: %s, treating as legacy", base_url, type(e).__name__)
        return False


def find_extension(card: dict, uri: str) -> dict | None:
    """The card's extension entry for `uri`, or None (a card without extensions included)."""
    for ext in (card.get("capabilities") or {}).get("extensions") or []:
        if ext.get("uri") == uri:
            return ext
    return None


def extension_params(card: dict, uri: str) -> dict:
    """The `params` of the extension at `uri`; `{}` when it is absent or has none."""
    ext = find_extension(card, uri)
    return (ext.get("params") or {}) if ext else {}


def find_extension_method(card: dict, uri: str, method: str) -> dict | None:
    """One advertised method of an extension: its entry with `endpoint` (the method's own, else
    the extension's) and `method`, the HTTP verb (POST unless advertised)."""
    params = extension_params(card, uri)
    entry = (params.get("methods") or {}).get(method)
    if entry is None:
        return None
    return {
        **entry,
        "endpoint": entry.get("endpoint") or params.get("endpoint"),
        "method": (entry.get("method") or "POST").upper(),
    }


def mcp_path(card: dict) -> str:
    """The path of the MCP endpoint the card declares, else `/mcp`."""
    for interface in card.get("additionalInterfaces") or []:
        if interface.get("transport") == MCP_TRANSPORT and interface.get("url"):
            return interface["url"]
    return MCP_PATH


def intake_declaration(card: dict) -> dict | None:
    """The params of the card's `urn:agentenv:intake/v1` declaration; None when it makes none."""
    ext = find_extension(card, INTAKE_EXTENSION_URI)
    return (ext.get("params") or None) if ext else None


def find_tool(card: dict, name: str) -> dict | None:
    """The card's tool entry named `name`, or None."""
    for entry in (card.get("capabilities") or {}).get("tools") or []:
        if entry.get("name") == name:
            return entry
    return None


def find_child(card: dict, name: str) -> dict | None:
    """The child card named `name` of a composed (gateway) card, or None."""
    for child in card.get("children_environments") or []:
        if child.get("name") == name:
            return child
    return None


async def get_interface_manifest(
    base_url: str,
    interface: str,
    endpoint: str = INTERFACE_MANIFEST_PATH,
    timeout: int = 30,
    verify: bool = True,
) -> Any:
    """One interface's manifest from the server's manifest index (`endpoint`)."""
    async with httpx.AsyncClient(verify=tls_verify(verify)) as http:
        response = await http.get(f"{base_url.rstrip('/')}{endpoint}/{interface}", timeout=timeout)
        response.raise_for_status()
        return response.json()


async def invoke_extension(
    base_url: str,
    card: dict,
    uri: str,
    params: dict | None = None,
    timeout: int = 30,
    verify: bool = True,
    *,
    method: str | None = None,
    headers: dict[str, str] | None = None,
) -> Any:
    """Call the extension method `method` (else the first listed) at the endpoint and with the
    verb the card advertises, sending `headers` (e.g. the env's secret); returns its JSON, or
    raises `ExtensionCallError` on a non-2xx."""
    ext = find_extension(card, uri)
    if ext is None:
        offered = [e.get("uri") for e in (card.get("capabilities") or {}).get("extensions") or []]
        raise ValueError(f"extension not advertised on card: {uri} (advertised: {offered})")
    advertised = ext.get("params") or {}
    methods = advertised.get("methods") or {}
    name = method if method is not None else next(iter(methods), None)
    if name is None:
        op: dict | None = {"endpoint": advertised.get("endpoint"), "method": "POST"}
    else:
        op = find_extension_method(card, uri, name)
    if op is None:
        raise ValueError(
            f"extension {uri} does not advertise method {method!r} "
            f"(advertises: {', '.join(methods) or 'none'})"
        )
    if not op["endpoint"]:
        raise ValueError(f"extension {uri} has no endpoint in params")
    url = f"{base_url}{op['endpoint']}"
    async with httpx.AsyncClient(verify=tls_verify(verify), headers=headers or {}) as http:
        if op["method"] == "GET":
            response = await http.get(url, params=params or {}, timeout=timeout)
        else:
            response = await http.request(op["method"], url, json=params or {}, timeout=timeout)
        if response.status_code >= 400:
            raise ExtensionCallError(response)
        return response.json()
