import anyio

from agentenv_protocol.gateway import TokenInPath
from agentenv_protocol.jsonrpc import parse_request


def test_ids_that_json_rpc_forbids_are_invalid_requests_and_never_echoed():
    for body in (
        b'{"jsonrpc":"2.0","id":true,"method":"m"}',
        b'{"jsonrpc":"2.0","id":{"a":1},"method":"m"}',
        b'{"jsonrpc":"2.0","id":NaN,"method":"m"}',
    ):
        req, error = parse_request(body)
        assert req is None and error["error"]["code"] == -32600 and error["id"] is None
    assert parse_request(b'{"jsonrpc":"2.0","id":"x","method":"m"}')[0]["id"] == "x"


def test_token_in_path_turns_a_capability_url_into_a_bearer_header():
    seen = {}

    async def app(scope, receive, send):
        seen.update(scope)

    scope = {
        "type": "http",
        "path": "/k/tok123/mcp",
        "headers": [(b"authorization", b"Bearer other")],
    }
    anyio.run(TokenInPath(app), scope, None, None)
    assert seen["path"] == "/mcp" and seen["headers"] == [(b"authorization", b"Bearer tok123")]
