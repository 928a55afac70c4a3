"""An existing product's `.agentenv/config.toml` loads: what we support is used, the rest is
named in one warning; our own sections stay strict."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_env.config import load_config
from agent_env.errors import ConfigError
from agent_env.stores import open_stores
from agentenv_testing.stores import run_with_config

# A sample in the existing product's format, written for this test.
REFERENCE_CONFIG = """
[model]
base_url = "http://127.0.0.1:4000"
default = "gpt-test"
[model.headers]
X-Team = "secret:TEAM_HEADER"

[stores.document]
impl = "agent_env.store.document_store:LocalSqliteDocumentStore"
config = {{ path = "{root}/docs.sqlite3" }}
[stores.object]
impl = "agent_env.store.object_store:LocalFilesystemObjectStore"
config = {{ root = "{root}/objects" }}
[stores.secret]
impl = "agent_env.store.secret_store:LocalSecretStore"
config = {{}}

[sandbox]
default = "local"
attribution = "team-a"
[sandbox.providers.e2b.config]
base_template = "base"

[agents]
default_a2a_agent_id = "claude-code"
[conversations]
default_human_a2a_url = "http://127.0.0.1:9999"
[explorer]
port = 8080
"""


@pytest.fixture
def project(tmp_path, agent_env_home, plugin_manager, monkeypatch):
    for var in [v for v in __import__("os").environ if v.startswith("AGENT_ENV_")]:
        if var != "AGENT_ENV_HOME":
            monkeypatch.delenv(var)
    root = tmp_path / "project"
    (root / ".agentenv").mkdir(parents=True)
    return root


def write(project: Path, text: str) -> Path:
    path = project / ".agentenv" / "config.toml"
    path.write_text(text)
    return path


def test_reference_config_loads_and_what_we_support_is_used(
    project, plugin_manager, agent_env_warnings
):
    path = write(project, REFERENCE_CONFIG.format(root=project))
    cfg = load_config(project)
    assert cfg.get("model", "base_url") == "http://127.0.0.1:4000"
    assert cfg.get("model", "default") == "gpt-test"
    assert "headers" not in cfg.table("model")  # ignored, so never resolved as a secret
    assert cfg.table("stores")["document"] == "sqlite"
    assert cfg.table("stores")["sqlite"] == {"path": f"{project}/docs.sqlite3"}
    assert cfg.table("stores")["object"] == "filesystem"
    assert cfg.table("stores")["filesystem"] == {"root": f"{project}/objects"}
    assert cfg.table("stores")["secret"] == "env"
    assert cfg.get("sandbox", "default") == "local"
    # one warning naming everything that is ignored
    assert len(cfg.warnings) == 1
    warning = cfg.warnings[0]
    assert warning.startswith(f"{path}: accepted for compatibility and ignored: ")
    for part in (
        "[model] headers",
        "[sandbox] attribution",
        "[sandbox] providers",
        "[agents]",
        "[conversations]",
        "[explorer]",
    ):
        assert part in warning
    assert agent_env_warnings == cfg.warnings
    load_config(project)
    assert agent_env_warnings == cfg.warnings  # logged once per process
    # the translated store settings are the ones the stores open with
    stores = open_stores(cfg, plugin_manager)
    try:
        assert Path(stores.documents.path) == project / "docs.sqlite3"
        assert Path(stores.objects.root) == project / "objects"
    finally:
        import anyio

        anyio.run(stores.close)


def test_reference_store_we_do_not_have_is_warned_and_the_default_kept(project):
    write(
        project,
        '[stores.document]\nimpl = "agent_env.store.document_store:MongoDocumentStore"\n'
        'config = { uri = "mongodb://x" }\n',
    )
    cfg = load_config(project)
    assert cfg.table("stores")["document"] == "sqlite"
    assert "MongoDocumentStore" in cfg.warnings[0] and "the default is used" in cfg.warnings[0]


def test_config_keys_a_reference_store_drops_are_named(project):
    write(
        project,
        "[stores.document]\n"
        'impl = "agent_env.store.document_store:LocalSqliteDocumentStore"\n'
        'config = { path = "/tmp/x.sqlite3", wal = true }\n',
    )
    cfg = load_config(project)
    assert cfg.table("stores")["sqlite"] == {"path": "/tmp/x.sqlite3"}
    assert "[stores.document] wal" in cfg.warnings[0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[model]\nbase_ulr = "http://x"\n',
            r"\[model\] has unknown key 'base_ulr' \(did you mean 'base_url'\?\)",
        ),
        ('[run]\nconcurrency = "many"\n', r"\[run\] concurrency: expected an integer, got 'many'"),
        ("[model]\nheaders = 3\n[model.hedaers]\nx = 1\n", r"unknown key 'hedaers'"),
        (
            "[conversatons]\nx = 1\n",
            r"unknown section 'conversatons' \(did you mean 'conversations'\?\)",
        ),
    ],
)
def test_our_sections_stay_strict(project, text, message):
    path = write(project, text)
    with pytest.raises(ConfigError, match=message) as err:
        load_config(project)
    assert str(path) in str(err.value)


def test_a_file_without_reference_sections_warns_nothing(project):
    write(project, "[run]\nconcurrency = 2\n")
    assert load_config(project).warnings == []


def test_every_command_runs_with_a_reference_config_and_warns_once(tmp_path):
    done = run_with_config(tmp_path, REFERENCE_CONFIG.format(root=tmp_path), "config", "show")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("accepted for compatibility and ignored") == 1, done.stderr
    assert "[model] headers" in done.stderr
    assert "agent-env: warning:" in done.stderr
    # with core-steps installed, [agents] default_a2a_agent_id is its [agents] default
    assert "[agents]" not in done.stderr
    agents = done.stdout.split("[agents]", 1)[1].split("\n[", 1)[0]
    assert 'default = "claude-code"' in agents


def test_store_settings_are_structured_too():
    """A backend's `[stores.<type>]` settings go through the same converter: wrong types and
    unknown keys are errors naming the table."""
    from agent_env.stores.support import check_settings

    defaults = {"bucket": None, "timeout": 60.0, "create_bucket": False}
    assert check_settings("s3", {"timeout": 5}, defaults)["timeout"] == 5
    with pytest.raises(ConfigError, match=r"\[stores.s3\] create_bucket: expected true or false"):
        check_settings("s3", {"create_bucket": "yes"}, defaults)
    with pytest.raises(ConfigError, match=r"unknown setting 'timout' \(did you mean 'timeout'\?\)"):
        check_settings("s3", {"timout": 5}, defaults)
    # a reference is resolved later, so it fits any type
    assert check_settings("s3", {"timeout": "env:S3_TIMEOUT"}, defaults)["timeout"] == (
        "env:S3_TIMEOUT"
    )


# The existing product's example config chooses its stores by name; written for this test from
# the key names its docs give (`[stores] <kind> = "local"`).
LOCAL_STORES_CONFIG = """
[stores]
document = "local"
object = "local"
image = "local"
secret = "local"
"""


def test_local_store_choices_become_our_local_stores(project, plugin_manager):
    path = write(project, LOCAL_STORES_CONFIG)
    cfg = load_config(project)
    stores = cfg.table("stores")
    assert (stores["document"], stores["object"], stores["secret"]) == (
        "sqlite",
        "filesystem",
        "env",
    )
    assert stores.get("image") is None
    (warning,) = cfg.warnings
    assert warning.startswith(f"{path}: accepted for compatibility and ignored: ")
    assert '[stores] image = "local"' in warning and "document" not in warning
    opened = open_stores(cfg, plugin_manager)
    try:
        assert opened.images is None
        assert type(opened.documents).type == "sqlite"
        assert type(opened.objects).type == "filesystem"
    finally:
        import anyio

        anyio.run(opened.close)


def test_a_local_choice_keeps_our_settings_for_that_store(project, plugin_manager):
    write(project, f'[stores]\ndocument = "local"\n[stores.sqlite]\npath = "{project}/d.sqlite3"\n')
    cfg = load_config(project)
    assert cfg.warnings == []
    opened = open_stores(cfg, plugin_manager)
    try:
        assert Path(opened.documents.path) == project / "d.sqlite3"
    finally:
        import anyio

        anyio.run(opened.close)


def test_an_unknown_store_name_is_still_an_error(project, plugin_manager):
    write(project, '[stores]\ndocument = "locl"\n')
    with pytest.raises(ConfigError, match="locl"):
        open_stores(load_config(project), plugin_manager)


def test_every_command_runs_with_local_store_choices(tmp_path):
    done = run_with_config(tmp_path, LOCAL_STORES_CONFIG, "config", "show")
    assert done.returncode == 0, done.stderr
    assert "unknown document store" not in done.stderr
    assert 'document = "sqlite"' in done.stdout
