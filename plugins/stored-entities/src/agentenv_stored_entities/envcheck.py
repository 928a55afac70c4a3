"""Probe a running env the way `agent-env env check` reports it: its card (required fields,
protocol version), its tools (names, input schemas as JSON Schema, card vs MCP `tools/list`),
its data plane (`data/reset`, `data/add`, `data/get` round trip) and its JSON-RPC error codes.

`await probe(url)` -> list of `Check`; nothing here starts or stops the env. httpx, mcp and
jsonschema come with `agentenv-framework-protocol` and are imported only when probing.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

PASS, FAIL, SKIP = "pass", "fail", "skip"

#: JSON-RPC 2.0's error codes, which every env's data plane must answer with.
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602

#: What MCP allows in a tool name.
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
DATA_METHODS = ("data/reset", "data/add", "data/get")


@attrs.frozen(kw_only=True)
class Check:
    """One line of the report: `id` such as `card.protocolVersion`, `status` pass/fail/skip."""

    id: str
    status: str
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status != FAIL


class _Report:
    def __init__(self) -> None:
        self.checks: list[Check] = []

    def add(self, check_id: str, ok: bool, detail: str = "") -> bool:
        self.checks.append(Check(id=check_id, status=PASS if ok else FAIL, detail=detail))
        return ok

    def skip(self, check_id: str, detail: str) -> None:
        self.checks.append(Check(id=check_id, status=SKIP, detail=detail))


async def probe(url: str, *, timeout: float = 30.0) -> list[Check]:
    """Every check of the env serving at `url` (its base URL, no trailing slash)."""
    import httpx

    from agentenv_protocol._http import tls_context

    report = _Report()
    async with httpx.AsyncClient(
        base_url=url, timeout=timeout, trust_env=False, verify=tls_context()
    ) as http:
        card = await _card(http, report)
        if card is None:
            return report.checks
        await _tools(url, card, report)
        declared = card.get("url")
        rpc_path = declared if isinstance(declared, str) else "/agentenv"
        if rpc_path.startswith(("http://", "https://")):
            rpc_path = httpx.URL(rpc_path).path
        has_data = await _data_plane(http, rpc_path, card, report)
        await _errors(http, rpc_path, report, has_data=has_data)
    return report.checks


async def _card(http: Any, report: _Report) -> dict[str, Any] | None:
    from agentenv_protocol.constants import PROTOCOL_VERSION, WELL_KNOWN_PATH

    try:
        response = await http.get(WELL_KNOWN_PATH)
        card = response.json() if response.status_code == 200 else None
    except Exception as e:  # any transport or JSON failure is this check's failure
        report.add("card", False, f"GET {WELL_KNOWN_PATH}: {type(e).__name__}: {e}")
        return None
    if not isinstance(card, dict):
        report.add(
            "card", False, f"GET {WELL_KNOWN_PATH}: HTTP {response.status_code}, no JSON object"
        )
        return None
    report.add("card", True, f"GET {WELL_KNOWN_PATH}")
    name = card.get("name")
    report.add("card.name", isinstance(name, str) and bool(name.strip()), f"name: {name!r}")
    version = card.get("protocolVersion")
    major = PROTOCOL_VERSION.split(".")[0]
    report.add(
        "card.protocolVersion",
        isinstance(version, str) and version.split(".")[0] == major,
        f"protocolVersion: {version!r} (this agent-env speaks {PROTOCOL_VERSION})",
    )
    rpc = card.get("url")
    report.add(
        "card.url",
        isinstance(rpc, str) and rpc.startswith(("/", "http://", "https://")),
        f"url: {rpc!r} (where the data plane answers)",
    )
    caps = card.get("capabilities")
    caps_ok = isinstance(caps, dict) and isinstance(caps.get("tools", []) or [], list)
    report.add("card.capabilities", caps_ok, "capabilities: an object; tools: a list")
    return card


def _card_tools(card: dict[str, Any]) -> list[dict[str, Any]]:
    caps = card.get("capabilities")
    tools = caps.get("tools") if isinstance(caps, dict) else None
    return [t for t in tools or [] if isinstance(t, dict)] if isinstance(tools, list) else []


async def _list_tools(mcp_url: str) -> list[dict[str, Any]]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        streamable_http_client(mcp_url) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
    return [tool.model_dump(mode="json", exclude_none=True) for tool in listed.tools]


def _mcp_path(card: dict[str, Any]) -> str:
    for iface in card.get("additionalInterfaces") or []:
        if isinstance(iface, dict) and iface.get("transport") == "mcp":
            return str(iface.get("url") or "/mcp")
    return "/mcp"


async def _tools(url: str, card: dict[str, Any], report: _Report) -> None:
    path = _mcp_path(card)
    mcp_url = path if path.startswith("http") else url + path
    try:
        listed = await _list_tools(mcp_url)
    except Exception as e:  # the env's MCP endpoint failing in any way is the finding
        report.add("tools.list", False, f"MCP tools/list at {mcp_url}: {type(e).__name__}: {e}")
        listed = None
    if listed is not None:
        names = [t.get("name") for t in listed]
        report.add("tools.list", True, f"MCP tools/list: {', '.join(map(str, names)) or 'none'}")
        in_card = sorted(str(t.get("name")) for t in _card_tools(card))
        report.add(
            "tools.card",
            sorted(map(str, names)) == in_card,
            f"card lists {in_card}, tools/list {sorted(map(str, names))}",
        )
    tools = listed if listed is not None else _card_tools(card)
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        name = tool.get("name")
        label = name if isinstance(name, str) and name else f"[{index}]"
        name_ok = isinstance(name, str) and bool(TOOL_NAME.match(name)) and name not in seen
        why = "a duplicate" if name in seen else "letters, digits, '_', '-', '.'; 1-128 long"
        report.add(
            f"tools.{label}.name", name_ok, f"name {name!r}" + ("" if name_ok else f": {why}")
        )
        seen.add(str(name))
        problem = schema_problem(tool.get("inputSchema"))
        report.add(f"tools.{label}.inputSchema", problem is None, problem or "valid JSON Schema")


def schema_problem(schema: Any) -> str | None:
    """Why `schema` is not a tool's input schema (a valid JSON Schema of `type: object`)."""
    if not isinstance(schema, dict):
        return f"inputSchema: expected an object, got {type(schema).__name__}"
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as e:
        where = "/".join(str(p) for p in e.absolute_path) or "(root)"
        return f"inputSchema: not a valid JSON Schema at {where}: {e.message}"
    if schema.get("type") != "object":
        return f"inputSchema: type must be 'object', got {schema.get('type')!r}"
    return None


async def _rpc(http: Any, path: str, body: Any) -> dict[str, Any]:
    raw = body if isinstance(body, str) else json.dumps(body)
    response = await http.post(path, content=raw, headers={"content-type": "application/json"})
    answer = response.json()
    if not isinstance(answer, dict):
        raise ValueError(f"HTTP {response.status_code}: not a JSON-RPC answer: {answer!r}")
    return answer


async def _call(http: Any, path: str, method: str, params: dict[str, Any]) -> Any:
    """The result of `method`; ValueError saying what came back instead."""
    answer = await _rpc(http, path, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    if "error" in answer:
        error = answer["error"] if isinstance(answer["error"], dict) else {}
        raise ValueError(f"error {error.get('code')}: {error.get('message')}")
    if "result" not in answer:
        raise ValueError(f"no result in {answer!r}")
    return answer["result"]


async def _data_plane(http: Any, path: str, card: dict[str, Any], report: _Report) -> bool:
    """Probe the data plane; False when the card declares none (nothing probed)."""
    caps = card.get("capabilities") if isinstance(card.get("capabilities"), dict) else {}
    operations = caps.get("operations") if isinstance(caps, dict) else None
    if isinstance(operations, list) and not set(DATA_METHODS) & set(operations):
        report.skip("data", "the card declares no data-plane operations")
        return False
    await _round_trip(http, path, report)
    return True


async def _round_trip(http: Any, path: str, report: _Report) -> None:
    """data/get (the env's own data), data/reset, data/add of what data/get gave, data/get:
    the last must equal the first. Each call that fails is its check's failure."""

    async def call(check_id: str, method: str, params: dict[str, Any]) -> tuple[bool, Any]:
        try:
            return True, await _call(http, path, method, params)
        except Exception as e:  # a failing call is this check's finding, named with the method
            report.add(check_id, False, f"{method}: {type(e).__name__}: {e}")
            return False, None

    def parts_of(result: Any) -> list[Any] | None:
        parts = result.get("parts") if isinstance(result, dict) else None
        return parts if isinstance(parts, list) else None

    ok, first = await call("data.get", "data/get", {})
    seeded = parts_of(first)
    if not ok or not report.add(
        "data.get",
        seeded is not None,
        f"data/get: {len(seeded)} part(s)"
        if seeded is not None
        else f"data/get: no parts in {first!r}",
    ):
        return
    ok, _ = await call("data.reset", "data/reset", {})
    if not ok:
        return
    ok, emptied = await call("data.reset", "data/get", {})
    if not ok:
        return
    report.add(
        "data.reset", True, f"data/reset, then data/get: {len(parts_of(emptied) or [])} part(s)"
    )
    ok, _ = await call("data.add", "data/add", {"parts": seeded})
    if not ok:
        return
    report.add("data.add", True, f"data/add of the {len(seeded or [])} part(s) data/get gave")
    ok, last = await call("data.roundtrip", "data/get", {})
    if not ok:
        return
    if not seeded or _canonical(seeded) == _canonical(parts_of(emptied) or []):
        report.skip("data.roundtrip", "data/get gave nothing that data/reset removed to add back")
        return
    after = parts_of(last) or []
    same = _canonical(after) == _canonical(seeded)
    report.add(
        "data.roundtrip",
        same,
        "data/get after data/reset and data/add(what data/get gave) equals the first data/get"
        if same
        else f"first data/get {seeded!r}, after data/reset and data/add {after!r}",
    )


def _canonical(parts: list[Any]) -> str:
    return json.dumps(parts, sort_keys=True)


async def _errors(http: Any, path: str, report: _Report, *, has_data: bool) -> None:
    cases = [
        ("errors.parse", "{not json", PARSE_ERROR),
        ("errors.invalidRequest", {"jsonrpc": "2.0", "id": 7}, INVALID_REQUEST),
        (
            "errors.methodNotFound",
            {"jsonrpc": "2.0", "id": 7, "method": "data/no-such-method", "params": {}},
            METHOD_NOT_FOUND,
        ),
        (
            "errors.invalidParams",
            {"jsonrpc": "2.0", "id": 7, "method": "data/add", "params": {"parts": 5}},
            INVALID_PARAMS,
        ),
    ]
    if not has_data:
        cases.pop()
        report.skip("errors.invalidParams", "no data/add to send invalid params to")
    for check_id, body, code in cases:
        try:
            answer = await _rpc(http, path, body)
        except Exception as e:  # no JSON-RPC answer at all is this check's finding
            report.add(check_id, False, f"expected JSON-RPC error {code}: {type(e).__name__}: {e}")
            continue
        error = answer.get("error")
        got = error.get("code") if isinstance(error, dict) else None
        report.add(check_id, got == code, f"expected JSON-RPC error {code}, got {got!r}")
