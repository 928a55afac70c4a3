"""Kept for old imports: the TLS context and client factory live in `agentenv_protocol._http`."""

from __future__ import annotations

from .._http import client, tls_context

__all__ = ["client", "tls_context"]
