"""The gateway's error type and the `*` wildcard, shared by its modules."""

from __future__ import annotations

WILDCARD = "*"


class GatewayError(Exception):
    """The gateway cannot serve this set of environments (unreachable env, tool-name clash...)."""
