"""Snapshot and restore of an env's state (`urn:agentenv:snapshot/v1`).

An author who keeps state the data plane does not show marks two methods::

    @snapshot_state
    def save(self) -> dict:             # any JSON value
        return {"notes": self.notes, "counter": self.counter}

    @restore_state
    def load(self, state: dict) -> None:  # gets back what save() returned
        self.notes, self.counter = dict(state["notes"]), state["counter"]

They are served as the REST extension `urn:agentenv:snapshot/v1` (`POST
/agentenv/ext/snapshot/take`, `POST /agentenv/ext/snapshot/restore` with `{"state": ...}`).
An env without them gets the default when its state is its data plane: the snapshot is what
`data/get` answers, a restore is `data/reset` then `data/add` of those parts.

`take_env_state` / `restore_env_state` are the client side of both ways; an `EnvState`'s digest
is the sha256 of its canonical JSON (sorted keys, no whitespace), so equal states have equal
digests whichever process took them.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentenv_protocol.authoring import extension

if TYPE_CHECKING:  # pragma: no cover
    from agentenv_protocol.client import EnvClient

SNAPSHOT_EXTENSION_URI = "urn:agentenv:snapshot/v1"
TAKE_PATH = "/agentenv/ext/snapshot/take"
RESTORE_PATH = "/agentenv/ext/snapshot/restore"
#: How a state was taken (`EnvState.via`): the author's handlers or the data-plane default.
VIA_EXTENSION = "extension"
VIA_DATA_PLANE = "data-plane"


def canonical(value: Any) -> bytes:
    """The one byte form a digest is taken of: JSON with sorted keys and no whitespace.
    Refuses what JSON cannot carry exactly (NaN, infinities, non-string keys, objects)."""
    _check_finite(value, "state")
    try:
        text = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as e:
        raise ValueError(f"the state is not plain JSON: {e}") from None
    return text.encode("utf-8")


def digest(value: Any) -> str:
    """`sha256:<hex>` of `canonical(value)`."""
    return "sha256:" + hashlib.sha256(canonical(value)).hexdigest()


def _check_finite(value: Any, where: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"the state is not plain JSON: {where} is {value!r}")
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"the state is not plain JSON: {where} has key {k!r}")
            _check_finite(v, f"{where}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_finite(v, f"{where}[{i}]")


def snapshot_state(fn: Callable) -> Callable:
    """Mark the method that returns the env's state (a JSON value) for a snapshot."""

    @functools.wraps(fn)
    async def take(self: Any) -> dict:
        value = fn(self)
        if inspect.isawaitable(value):
            value = await value
        canonical(value)  # an unserialisable state fails here, naming the problem
        return {"state": value}

    take.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    )
    take.__annotations__ = {"return": dict}
    return extension(
        SNAPSHOT_EXTENSION_URI,
        op="take",
        method="POST",
        description="Snapshot and restore of the env's state.",
        path=TAKE_PATH,
    )(take)


def restore_state(fn: Callable) -> Callable:
    """Mark the method that puts back a state its `@snapshot_state` method returned."""

    @functools.wraps(fn)
    async def restore(self: Any, state: Any) -> dict:
        value = fn(self, state)
        if inspect.isawaitable(value):
            await value
        return {}

    restore.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter("state", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Any),
        ]
    )
    restore.__annotations__ = {"state": Any, "return": dict}
    return extension(
        SNAPSHOT_EXTENSION_URI,
        op="restore",
        method="POST",
        description="Snapshot and restore of the env's state.",
        path=RESTORE_PATH,
    )(restore)


def serves_snapshots(card: Any) -> bool:
    """Whether an env card (model or dict) advertises `urn:agentenv:snapshot/v1`."""
    if hasattr(card, "model_dump"):
        card = card.model_dump()
    extensions = ((card or {}).get("capabilities") or {}).get("extensions") or []
    return any(isinstance(e, dict) and e.get("uri") == SNAPSHOT_EXTENSION_URI for e in extensions)


def env_state(via: str, state: Any) -> dict:
    """The stored form of one env's state, with its digest (`{via, state, digest}`)."""
    body = {"via": via, "state": state}
    return {**body, "digest": digest(body)}


def check_env_state(name: str, stored: Any) -> dict:
    """A stored env state checked: its shape and that its digest matches its content."""
    if not isinstance(stored, dict) or stored.get("via") not in (VIA_EXTENSION, VIA_DATA_PLANE):
        raise ValueError(f"env {name!r}: not an env state (want {{via, state, digest}})")
    body = {"via": stored["via"], "state": stored.get("state")}
    if digest(body) != stored.get("digest"):
        raise ValueError(
            f"env {name!r}: the state's digest {stored.get('digest')!r} does not match its "
            "content (the snapshot was changed or damaged)"
        )
    return stored


async def take_env_state(
    client: EnvClient, *, card: Any = None, timeout: float | None = None
) -> dict:
    """The env's state through `client` (its own handlers, else `data/get`), with its digest;
    `card` (the env's card, when the caller has it) saves fetching it."""
    if card is None:
        card = await client.card(timeout=timeout)
    if serves_snapshots(card):
        answer = await client.extension(TAKE_PATH, {}, timeout=timeout)
        return env_state(VIA_EXTENSION, (answer or {}).get("state"))
    from agentenv_protocol.constants import METHOD_GET

    result = await client.rpc(METHOD_GET, {}, timeout=timeout)
    return env_state(VIA_DATA_PLANE, list((result or {}).get("parts") or []))


async def restore_env_state(
    client: EnvClient, stored: dict, *, timeout: float | None = None
) -> None:
    """Put a state `take_env_state` returned back into the env behind `client`."""
    if stored["via"] == VIA_EXTENSION:
        await client.extension(RESTORE_PATH, {"state": stored["state"]}, timeout=timeout)
        return
    from agentenv_protocol.constants import METHOD_ADD

    await client.reset(timeout=timeout)
    if stored["state"]:
        await client.rpc(METHOD_ADD, {"parts": stored["state"]}, timeout=timeout)
