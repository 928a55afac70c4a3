"""A long-lived session keeps its top-level redactor while the secrets are unchanged (a front
end that starts a run per episode reads the secret store once), and builds a new one as soon
as a secret is added, changed or removed, from this process or another, so later episodes
redact it."""

from __future__ import annotations

import types

import anyio

from agent_env.redact import REDACTED, StoreRedactors
from agent_env.stores.env_secrets import EnvSecretStore


class CountingSecrets(EnvSecretStore):
    """The real env/file secret store, counting how often every value is read."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.reads = 0

    async def list(self) -> list[str]:
        self.reads += 1
        return await super().list()


def test_kept_while_unchanged_rebuilt_when_a_secret_is_added_or_changed(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENT_ENV_SECRET_LATE", raising=False)

    async def main() -> None:
        store = CountingSecrets(home=tmp_path)
        await store.set("first", "first-secret-value")
        redactors = StoreRedactors(types.SimpleNamespace(secrets=store))
        one = await redactors.current()
        assert await redactors.current() is one
        assert store.reads == 1
        assert one("x first-secret-value") == f"x {REDACTED}"

        # another process writes the file: the next redactor knows the new secret
        other = EnvSecretStore(home=tmp_path)
        await other.set("second", "second-secret-value")
        two = await redactors.current()
        assert two is not one
        assert two("second-secret-value first-secret-value") == f"{REDACTED} {REDACTED}"

        # a secret that comes from the environment counts as well
        monkeypatch.setenv("AGENT_ENV_SECRET_LATE", "late-secret-value")
        three = await redactors.current()
        assert three("late-secret-value") == REDACTED
        assert await redactors.current() is three
        assert store.reads == 3

        # so does a secret-looking variable of the host environment (guessed values)
        monkeypatch.setenv("SOME_API_KEY", "guessed-api-key-value")
        assert (await redactors.current())("guessed-api-key-value") == REDACTED

    anyio.run(main)


def test_a_store_that_cannot_tell_its_revision_is_read_every_time(tmp_path):
    class Blind(CountingSecrets):
        def revision(self) -> object | None:
            return None

    async def main() -> None:
        store = Blind(home=tmp_path)
        await store.set("first", "first-secret-value")
        redactors = StoreRedactors(types.SimpleNamespace(secrets=store))
        before = store.reads
        one = await redactors.current()
        two = await redactors.current()
        assert one is not two
        assert store.reads == before + 2

    anyio.run(main)


def test_a_sessions_runs_share_a_redactor_until_a_secret_is_added(tmp_path, monkeypatch):
    """What an OpenEnv server does: one session, a run (services) per episode."""
    monkeypatch.setenv("AGENT_ENV_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)

    async def main() -> None:
        from agent_env.engine.run import Session

        session = await Session.open()
        try:
            first = await session.services()
            second = await session.services()
            assert first.redactor is second.redactor
            assert first.redactor("added-later-value") == "added-later-value"
            await session.stores.secrets.set("added-later", "added-later-value")
            third = await session.services()
            assert third.redactor is not first.redactor
            episode = third.redactor.child()  # what an episode's instance redacts with
            assert episode({"note": "x added-later-value"}) == {"note": f"x {REDACTED}"}
        finally:
            await session.close()

    anyio.run(main)
