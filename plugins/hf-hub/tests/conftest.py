"""Fixtures: a local Hub served to the real `huggingface_hub` client, and an isolated cache."""

from __future__ import annotations

import pytest

from agentenv_hf_hub.testing import LocalHub

TOKEN = "hf_test_token_for_gated_repos"


@pytest.fixture
def token() -> str:
    """A token the local Hub accepts for gated and private repos."""
    return TOKEN


@pytest.fixture
def hub() -> LocalHub:
    hub = LocalHub()
    hub.tokens.add(TOKEN)
    return hub


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """`$XDG_CACHE_HOME` in a temp folder; no Hugging Face token, no offline switch."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "hf-home" / "token"))
    for name in (
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "HF_OIDC_RESOURCE",
    ):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "xdg-cache" / "agentenv" / "hf"


@pytest.fixture
def endpoint(hub, cache, monkeypatch):
    """The local Hub running, with `HF_ENDPOINT` pointing at it."""
    with hub.serve() as url:
        monkeypatch.setenv("HF_ENDPOINT", url)
        yield url
