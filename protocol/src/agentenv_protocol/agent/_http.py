"""Kept for old imports: the TLS context and client factory live in `agentenv_protocol._http`."""

from __future__ import annotations

from agentenv_protocol._http import client, tls_context

__all__ = ["client", "tls_context"]
