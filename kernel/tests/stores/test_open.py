"""`open_stores`: backend choice from `[stores]`, settings sub-tables, and clear config errors."""

import sqlite3

import pytest

from agent_env.errors import ConfigError, StoreError
from agent_env.plugins import PluginManager, StoreRegistry
from agent_env.stores import Stores, open_stores, open_stores_async
from agent_env.stores.filesystem import FilesystemObjectStore
from agent_env.stores.hooks import agentenv_register_stores
from agent_env.stores.sqlite import SqliteDocumentStore


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def plugins():
    return PluginManager(autoload=False)


@pytest.mark.anyio
async def test_defaults_live_under_home(plugins, tmp_path):
    stores = open_stores({}, plugins, home=tmp_path)
    assert (stores.documents.type, stores.objects.type, stores.secrets.type) == (
        "sqlite",
        "filesystem",
        "env",
    )
    assert stores.images is None
    assert not any(tmp_path.iterdir()), "opening the stores must not touch the disk"
    await stores.documents.put("runs", "r1", {"ok": True})
    await stores.objects.put("a/b.txt", b"hi")
    await stores.secrets.set("token", "s3cret")
    await stores.close()
    assert (tmp_path / "objects" / "a" / "b.txt").read_bytes() == b"hi"
    assert (tmp_path / "secrets.json").stat().st_mode & 0o777 == 0o600
    with sqlite3.connect(tmp_path / "documents.sqlite3") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT doc FROM documents").fetchall() == [('{"ok":true}',)]


@pytest.mark.anyio
async def test_settings_sub_tables_reach_the_backends(plugins, tmp_path, monkeypatch):
    monkeypatch.setenv("OBJ_ROOT", str(tmp_path / "blobs"))
    table = {
        "document": "sqlite",
        "sqlite": {"path": str(tmp_path / "db" / "docs.db")},
        "filesystem": {"root": "env:OBJ_ROOT"},
    }
    stores = open_stores(table, plugins, home=tmp_path / "home")
    assert stores.documents.path == tmp_path / "db" / "docs.db"
    assert stores.objects.root == tmp_path / "blobs"
    assert stores.secrets.path == tmp_path / "home" / "secrets.json"
    await stores.documents.put("c", "k", {})
    assert (tmp_path / "db" / "docs.db").exists()
    await stores.close()


@pytest.mark.anyio
async def test_config_object_is_accepted(plugins, tmp_path, monkeypatch):
    from agent_env.config import load_config

    home = tmp_path / "home"
    monkeypatch.setenv("AGENT_ENV_HOME", str(home))
    project = tmp_path / "project"
    (project / ".agentenv").mkdir(parents=True)
    (project / ".agentenv" / "config.toml").write_text(
        f'[stores]\ndocument = "sqlite"\n[stores.sqlite]\npath = "{tmp_path / "cfg.sqlite3"}"\n'
    )
    config = load_config(project, plugins=plugins)
    stores = open_stores(config, plugins)
    assert stores.documents.path == tmp_path / "cfg.sqlite3"
    assert stores.objects.root == home / "objects"
    await stores.close()


@pytest.mark.parametrize(
    "table, message",
    [
        ({"document": "sqlit"}, "did you mean 'sqlite'"),
        ({"object": "filesytem"}, "did you mean 'filesystem'"),
        ({"documents": "sqlite"}, "unknown key 'documents' (did you mean 'document'?)"),
        ({"document": 3}, "must be the name of a document store type"),
        ({"secret": ""}, "must be the name of a secret store type"),
        ({"sqlit": {"path": "x"}}, "[stores.sqlit]: no store type 'sqlit' is installed (did you"),
        (
            {"sqlite": {"paht": "x"}},
            "[stores.sqlite] has unknown setting 'paht' (did you mean 'path'?)",
        ),
        (
            {"filesystem": {"root": "env:AGENT_ENV_TEST_UNSET_VAR"}},
            "AGENT_ENV_TEST_UNSET_VAR is not set",
        ),
        ({"filesystem": {"root": "secret:blob-root"}}, "open_stores_async"),
        ({"document": "filesystem"}, "('filesystem' is an object store)"),
        ({"document": "s3"}, "('s3' is an object store)"),
        ({"image": "sqlite"}, "('sqlite' is a document store)"),
    ],
)
def test_bad_tables_fail_clearly(plugins, tmp_path, table, message):
    with pytest.raises(ConfigError) as info:
        open_stores(table, plugins, home=tmp_path)
    assert message in str(info.value)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    "table, message",
    [
        (
            {"documnet": "sqlite"},
            "[stores] has an unknown key 'documnet' (did you mean 'document'?); keys are "
            "document, object, secret, image and [stores.<type>] tables of backend settings",
        ),
        (
            {"object": ["filesystem"]},
            "[stores] object = ['filesystem']: must be the name of an object store type "
            "(expected a string, got ['filesystem'])",
        ),
        ({"image": "  "}, "[stores] image = '  ': must be the name of an image store type"),
    ],
)
def test_the_stores_table_messages(plugins, tmp_path, table, message):
    with pytest.raises(ConfigError) as info:
        open_stores(table, plugins, home=tmp_path)
    assert str(info.value) == message
    assert not any(tmp_path.iterdir())


def test_an_empty_image_store_means_none(plugins, tmp_path):
    for value in ("", "none"):
        stores = open_stores({"image": value}, plugins, home=tmp_path)
        assert stores.images is None


@pytest.mark.parametrize(
    "kind, name, extra",
    [
        ("object", "s3", "aws"),
        ("document", "dynamodb", "aws"),
        ("secret", "secretsmanager", "aws"),
        ("image", "ecr", "aws"),
        ("object", "gcs", "gcp"),
        ("document", "firestore", "gcp"),
        ("secret", "secretmanager", "gcp"),
        ("image", "artifactregistry", "gcp"),
    ],
)
def test_cloud_backend_without_its_plugin_names_the_extra(plugins, tmp_path, kind, name, extra):
    with pytest.raises(ConfigError) as info:
        open_stores({kind: name}, plugins, home=tmp_path)
    assert f"pip install 'agentenv-framework[{extra}]'" in str(info.value)
    assert f"[stores] {kind} = {name!r}" in str(info.value)


@pytest.mark.parametrize("value", ["", "none"])
def test_image_store_can_be_switched_off(plugins, tmp_path, value):
    assert open_stores({"image": value}, plugins, home=tmp_path).images is None


def test_plain_registry_holder_works(tmp_path):
    class Holder:
        stores = StoreRegistry()

    agentenv_register_stores(Holder.stores)
    stores = open_stores({"image": None}, Holder(), home=tmp_path)
    assert isinstance(stores.documents, SqliteDocumentStore)
    assert isinstance(stores.objects, FilesystemObjectStore)


class EchoSettingsDocuments(SqliteDocumentStore):
    """A document backend that keeps whatever settings it was given (for ref resolution)."""

    type = "echo"

    def __init__(self, settings=None, *, home=None):
        self.given = dict(settings or {})
        super().__init__({}, home=home)


@pytest.mark.anyio
async def test_async_open_resolves_secret_refs_from_the_secret_store(tmp_path, monkeypatch):
    class Holder:
        stores = StoreRegistry()

    agentenv_register_stores(Holder.stores)
    Holder.stores.add(EchoSettingsDocuments)
    monkeypatch.setenv("AGENT_ENV_SECRET_DB_PASSWORD", "pw-from-env")
    monkeypatch.setenv("DB_HOST", "db.example")
    table = {
        "document": "echo",
        "echo": {"password": "secret:db-password", "host": "env:DB_HOST", "port": "env:NOPE?5432"},
    }
    stores = await open_stores_async(table, Holder(), home=tmp_path)
    assert stores.documents.given == {
        "password": "pw-from-env",
        "host": "db.example",
        "port": "5432",
    }
    with pytest.raises(ConfigError, match="secret 'missing' not found"):
        await open_stores_async(
            {"document": "echo", "echo": {"password": "secret:missing"}}, Holder(), home=tmp_path
        )
    await stores.close()


@pytest.mark.anyio
async def test_close_closes_every_store_and_entities_are_available(plugins, tmp_path):
    stores = open_stores({}, plugins, home=tmp_path)
    assert isinstance(stores, Stores)
    result = await stores.entities.put("task", "@local/x/t", {"steps": []}, digest="d1")
    assert result.describe() == "v1 (new)"
    await stores.close()
    with pytest.raises(StoreError, match="closed"):
        await stores.documents.get("c", "k")
