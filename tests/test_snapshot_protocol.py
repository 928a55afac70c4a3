"""The env SDK's snapshot/restore (`urn:agentenv:snapshot/v1`): an author's handlers or the
data-plane default, over a real server and the real client; digests of the canonical form."""

from __future__ import annotations

import pytest

from agentenv_protocol import (
    SNAPSHOT_EXTENSION_URI,
    AgentEnvEnvironment,
    DataPart,
    add_data,
    environment_card,
    get_data,
    reset_data,
    restore_state,
    snapshot_state,
    tool,
)
from agentenv_protocol.client import EnvClient
from agentenv_protocol.errors import ProtocolError
from agentenv_protocol.serving import serve_in_thread
from agentenv_protocol.snapshots import (
    check_env_state,
    digest,
    restore_env_state,
    take_env_state,
)

pytestmark = pytest.mark.anyio


@environment_card(name="counter")
class Counter(AgentEnvEnvironment):
    """State the data plane does not show (a counter and a log): the author snapshots it."""

    def __init__(self) -> None:
        self.count = 0
        self.log: list[str] = []

    @tool()
    def bump(self, by: int = 1) -> int:
        """Add to the counter."""
        self.count += by
        self.log.append(f"+{by}")
        return self.count

    @snapshot_state
    def save(self) -> dict:
        return {"count": self.count, "log": list(self.log)}

    @restore_state
    async def load(self, state: dict) -> None:
        if not isinstance(state, dict) or "count" not in state:
            raise ValueError("not a counter state")
        self.count, self.log = int(state["count"]), list(state["log"])


@environment_card(name="notes")
class Notes(AgentEnvEnvironment):
    """State that is its data plane: the default snapshot applies."""

    def __init__(self) -> None:
        self.notes = {"welcome": "hi"}

    @tool()
    def add_note(self, title: str, body: str) -> str:
        """Add a note."""
        self.notes[title] = body
        return title

    @reset_data
    def reset(self) -> None:
        self.notes.clear()

    @add_data
    def add(self, parts: list) -> None:
        for part in parts:
            self.notes.update(part.data.get("notes", {}))

    @get_data
    def export(self) -> list:
        return [DataPart(data={"notes": dict(sorted(self.notes.items()))})]


@pytest.fixture(scope="module")
def servers():
    running = [serve_in_thread(Counter().create_app()), serve_in_thread(Notes().create_app())]
    yield [r.url for r in running]
    for r in running:
        r.stop(timeout=5.0)


async def test_the_author_handlers_are_advertised_and_round_trip(servers):
    async with EnvClient(servers[0]) as env:
        card = await env.card()
        uris = [e.uri for e in card.capabilities.extensions or []]
        assert SNAPSHOT_EXTENSION_URI in uris
        assert "save" not in [t.name for t in card.capabilities.tools or []]
        await env.call_tool("bump", {"by": 2})
        taken = await take_env_state(env)
        assert taken["via"] == "extension"
        assert taken["state"] == {"count": 2, "log": ["+2"]}
        await env.call_tool("bump", {"by": 5})
        assert (await take_env_state(env))["digest"] != taken["digest"]
        await restore_env_state(env, taken)
        assert (await take_env_state(env))["digest"] == taken["digest"]
        assert (await env.call_tool("bump", {"by": 1})).text == "3"


async def test_envs_without_handlers_snapshot_their_data_plane(servers):
    async with EnvClient(servers[1]) as env:
        taken = await take_env_state(env)
        assert taken["via"] == "data-plane"
        await env.call_tool("add_note", {"title": "later", "body": "x"})
        assert (await take_env_state(env))["digest"] != taken["digest"]
        await restore_env_state(env, taken)
        again = await take_env_state(env)
        assert again == taken
        assert again["state"][0]["data"] == {"notes": {"welcome": "hi"}}


async def test_a_refused_restore_says_why_and_leaves_the_state(servers):
    async with EnvClient(servers[0]) as env:
        before = await take_env_state(env)
        with pytest.raises(ProtocolError) as caught:
            await restore_env_state(env, {"via": "extension", "state": {"nope": 1}})
        assert "not a counter state" in str(caught.value)
        assert await take_env_state(env) == before


def test_the_digest_is_of_a_canonical_form():
    assert digest({"b": 1, "a": [1, 2]}) == digest({"a": [1, 2], "b": 1})
    assert digest({"a": 1}) != digest({"a": 2})
    assert digest({"a": 1}).startswith("sha256:") and len(digest(1)) == 71
    with pytest.raises(ValueError, match="not plain JSON: state.x is nan"):
        digest({"x": float("nan")})
    with pytest.raises(ValueError, match="not plain JSON"):
        digest({"x": object()})


def test_a_changed_state_no_longer_matches_its_digest():
    good = {
        "via": "data-plane",
        "state": [1],
        "digest": digest({"via": "data-plane", "state": [1]}),
    }
    assert check_env_state("e", good) is good
    with pytest.raises(ValueError, match="env 'e': the state's digest .* does not match"):
        check_env_state("e", {**good, "state": [2]})
    with pytest.raises(ValueError, match="env 'e': not an env state"):
        check_env_state("e", {"via": "magic"})
