"""Checks the bank with the SDK's verifier helpers: the tools' answers as JSON, and the env's
own state read through the data plane (under the verifier role)."""

from agentenv_protocol.verifier import env_data, tool_json


def verify(mcp_url):
    names = tool_json(mcp_url, "list_accounts")  # a list, whatever blocks the server sent
    bob = tool_json(mcp_url, "balance", {"account": "bob"})
    (state,) = env_data(mcp_url, "bank")
    log = state["data"]["log"]
    return [
        {"id": "seeded", "result": names == ["alice", "bob", "carol"], "description": str(names)},
        {"id": "paid", "result": bob["cents"] == 15200, "description": f"bob has {bob['cents']}"},
        {
            "id": "one-transfer",
            "result": log == [{"source": "alice", "target": "bob", "cents": 15000}],
            "description": f"transfer log: {log}",
        },
    ]
