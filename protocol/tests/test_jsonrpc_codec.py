"""`jsonrpc.encoder` and `jsonrpc.decode` (the tool-call path's JSON) give exactly what
`json.dumps` and `json.loads` give: the same text, the same values, the same errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from agentenv_protocol import jsonrpc

VALUES = [
    {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "hi"}]}},
    {"text": "é ü 中 \u2028 \ud800 lone", "emoji": "\U0001f600", "ctrl": '\x00\x1f"\\'},
    {"n": [0, -1, 2**70, 1.5, 1e300, float("nan"), float("inf"), -float("inf")]},
    {"none": None, "t": True, "f": False, "empty": {}, "list": [], "nested": [[{"a": [1]}]]},
    {3: "int key", 2.5: "float key", None: "null key", True: "bool key"},
    {"when": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)},  # only with default=str
    "a string",
    "é",
    12,
    None,
]


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_encoder_gives_what_json_dumps_gives(ensure_ascii):
    encode = jsonrpc.encoder(ensure_ascii=ensure_ascii, default=str)
    for value in VALUES:
        assert encode(value) == json.dumps(value, ensure_ascii=ensure_ascii, default=str)


def test_encoder_errors_are_json_dumps_errors():
    with pytest.raises(TypeError, match="not JSON serializable"):
        jsonrpc.dumps({"when": datetime(2026, 1, 1)})  # no default: as json.dumps
    looped: dict = {}
    looped["self"] = looped
    for encode in (jsonrpc.dumps, jsonrpc.encoder(default=str)):
        with pytest.raises(ValueError, match="Circular reference"):  # not a RecursionError
            encode(looped)


BODIES = [
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call"}',
    '{"text": "é \\ud800"}'.encode(),
    b'{"a": "\xed\xa0\x80"}',  # a surrogate encoded as UTF-8 bytes: json.loads lets it through
    b"\xef\xbb\xbf" + b'{"bom": 1}',
    '{"a": 1}'.encode("utf-16-le"),
    '{"a": 1}'.encode("utf-16"),
    '{"a": 1}'.encode("utf-32"),
    b"[1, 2]",
    b'"s"',
    b"{",
    b'{"a": 1} trailing',
    b"{\xff}",
    b"",
]


@pytest.mark.parametrize("body", BODIES)
def test_decode_gives_what_json_loads_gives(body):
    def outcome(loads):
        try:
            return "value", loads(body)
        except (ValueError, UnicodeDecodeError) as e:
            return type(e).__name__, str(e)

    assert outcome(jsonrpc.decode) == outcome(json.loads)
