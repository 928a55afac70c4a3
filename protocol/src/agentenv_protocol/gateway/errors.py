"""The gateway's error type, the `*` wildcard and whose fault a failed tool call was, shared
by its modules."""

from __future__ import annotations

from agentenv_protocol.errors import FAULT_META_KEY, FAULTS

__all__ = ["FAULTS", "GatewayError", "WILDCARD", "call_fault", "marked_fault"]

WILDCARD = "*"


class GatewayError(Exception):
    """The gateway cannot serve this set of environments (unreachable env, tool-name clash...)."""


#: Whose fault a failed tool call was (`FAULTS`, defined with the protocol's errors so an env
#: server marks its answers without importing the gateway), as the gateway logs it (`fault` of
#: a call log entry): `env` (the env's tool raised or returned what does not fit, the env
#: stopped, closed the connection or did not answer in time), `infrastructure` (a connection
#: to a live env could not be made in time: the machine or network, not the env) and `agent`
#: (refused: an unknown, hidden or disabled tool, bad arguments, an `AgentEnvError` the env
#: answered with).


#: What an env may say of its own answer: blame itself or the caller, never the infrastructure
#: (that would take the trial out of the statistics on the env's word).
ENV_MARKS = ("agent", "env")


def marked_fault(result: dict) -> str | None:
    """The fault an env server marked on its error answer, if it is one of `ENV_MARKS`."""
    meta = result.get("_meta") if isinstance(result, dict) else None
    fault = meta.get(FAULT_META_KEY) if isinstance(meta, dict) else None
    return fault if fault in ENV_MARKS else None


def call_fault(answer: dict, marked: str | None = None) -> str | None:
    """The `fault` of a tools/call answer: None when it succeeded, else `marked` (by the env or
    by the gateway's transport), else `agent` (a refusal)."""
    if "jsonrpc" in answer:
        return marked or "agent"
    if not answer.get("isError"):
        return None
    return marked or "agent"
