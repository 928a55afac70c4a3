"""The helpers every store backend shares: settings checks, object keys and secret listing,
atomic writes, and the lazily built SDK client."""

from __future__ import annotations

import os
import stat
import types

import anyio
import pytest

from agent_env.errors import ConfigError, StoreError
from agent_env.fsutil import atomic_write, replacing
from agent_env.stores.client import LazyClient
from agent_env.stores.names import secret_names_under
from agent_env.stores.support import (
    check_settings,
    decode_document,
    encode_document,
    object_root,
    pack_document,
    require_setting,
    unpack_document,
)

DEFAULTS = {"bucket": None, "prefix": "", "timeout": 60.0}


def test_settings_get_defaults_and_unknown_keys_a_suggestion():
    assert check_settings("s", {"bucket": "b", "timeout": None}, DEFAULTS) == {
        "bucket": "b",
        "prefix": "",
        "timeout": 60.0,
    }
    with pytest.raises(
        ConfigError,
        match=r"\[stores.s\] has unknown setting 'buckt' "
        r"\(did you mean 'bucket'\?\); known: bucket, prefix",
    ):
        check_settings("s", {"buckt": "b"}, DEFAULTS)


def test_a_required_setting_names_the_environment_variable():
    with pytest.raises(ConfigError, match="bucket is not set.*AGENT_ENV_STORES_S_BUCKET"):
        require_setting("s", {"bucket": ""}, "bucket")


def test_documents_round_trip_as_compact_json():
    assert encode_document({"a": [1, "é"]}) == '{"a":[1,"é"]}'
    assert decode_document(b'{"a":1}', "c/k") == {"a": 1}
    with pytest.raises(StoreError, match="c/k: stored document is not a JSON object"):
        decode_document("[1]", "c/k")
    with pytest.raises(StoreError, match="not JSON-serializable"):
        encode_document({"x": float("nan")})


def test_large_documents_are_compressed_and_limited():
    small, big = {"a": 1}, {"log": "ok\n" * 1000}
    assert pack_document(small, "c/k", compress_over=100, limit=50, limit_name="L") == '{"a":1}'
    packed = pack_document(big, "c/k", compress_over=100, limit=500, limit_name="L")
    assert isinstance(packed, bytes) and unpack_document(packed, "c/k") == big
    with pytest.raises(StoreError, match="document c/k: .* bytes compressed, over X's limit of 5"):
        pack_document(big, "c/k", compress_over=100, limit=5, limit_name="X's limit")
    with pytest.raises(StoreError, match="c/k: stored document is corrupt"):
        unpack_document(b"not zlib", "c/k")


def test_object_root_gets_one_trailing_slash_and_is_checked():
    assert (object_root(None), object_root("team-a"), object_root("team-a/")) == (
        "",
        "team-a/",
        "team-a/",
    )
    with pytest.raises(StoreError, match="bad object prefix"):
        object_root("../up")


def test_secret_names_under_a_prefix_follow_the_name_rules():
    ids = ["agentenv/b-key", "agentenv/a_key", "other/c", "agentenv/nested/x", "agentenv/"]
    assert secret_names_under("agentenv/", ids) == ["a_key", "b-key"]


def test_atomic_write_sets_the_mode_and_replaces(tmp_path):
    path = tmp_path / "sub" / "secrets.json"
    atomic_write(path, "old", mode=0o600)
    atomic_write(path, b"new", mode=0o600, fsync=False)
    assert path.read_bytes() == b"new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.listdir(path.parent) == ["secrets.json"]


def test_a_failed_replacement_leaves_the_old_file_and_no_temp(tmp_path):
    path = tmp_path / "f"
    path.write_text("old")
    with pytest.raises(RuntimeError), replacing(path) as tmp:
        with open(tmp, "w") as fh:
            fh.write("half")
        raise RuntimeError("download broke")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["f"]


class Flaky(LazyClient):
    builds = 0

    def build(self):
        Flaky.builds += 1
        return types.SimpleNamespace(close=lambda: None)

    def translate(self, exc, what):
        if isinstance(exc, ValueError):
            return StoreError(f"{self.type_name} store: cannot {what}: {exc}")
        return None


def test_lazy_client_builds_once_and_translates_sdk_errors():
    client = Flaky("demo", {})
    assert Flaky.builds == 0

    def fail(_):
        raise ValueError("boom")

    with pytest.raises(StoreError, match="demo store: cannot get x: boom"):
        anyio.run(client.call, fail, "get x")
    with pytest.raises(KeyError):
        client.sync(lambda _: {}["k"], "get k")
    assert Flaky.builds == 1
    client.close()
    with pytest.raises(StoreError, match="the demo store is closed"):
        client.sync(lambda c: c, "use it")
