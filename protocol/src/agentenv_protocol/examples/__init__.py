"""Example environments: `echo` (stateless tools) and `notes` (a stateful store with the data plane).

Run one with `python -m agentenv_protocol.examples.echo` (honours MCP_HOST / MCP_PORT / ENVIRONMENT_NAME).
"""
