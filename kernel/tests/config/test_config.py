"""Config discovery, precedence, validation, references and masking."""

from __future__ import annotations

import anyio
import pytest

from agent_env import hookimpl
from agent_env.config import configure, load_config
from agent_env.errors import ConfigError


@pytest.fixture
def project(tmp_path, agent_env_home, plugin_manager, monkeypatch):
    """A project folder with `.agentenv/`; env vars that would leak in are cleared."""
    for var in [v for v in __import__("os").environ if v.startswith("AGENT_ENV_")]:
        if var != "AGENT_ENV_HOME":
            monkeypatch.delenv(var)
    root = tmp_path / "project"
    (root / ".agentenv").mkdir(parents=True)
    return root


def write(project, text: str):
    path = project / ".agentenv" / "config.toml"
    path.write_text(text)
    return path


def test_no_file_and_empty_file_keep_local_defaults(project, agent_env_home):
    cfg = load_config(project)
    assert cfg.path is None
    assert cfg.table("stores") == {
        "document": "sqlite",
        "object": "filesystem",
        "secret": "env",
        "image": None,
    }
    assert cfg.get("sandbox", "default") == "local"
    assert cfg.get("run", "concurrency") == 8
    assert cfg.home == agent_env_home
    path = write(project, "")
    cfg = load_config(project)
    assert cfg.path == path
    assert cfg.table("run") == {
        "concurrency": 8,
        "runner": "local",
        "sandbox_concurrency": 8,
        "retry_infra": 0,
        "progress_interval": 10.0,
        "budget_usd": None,
        "pool": 0,
        "pool_min_free_mb": 512,
    }
    assert cfg.origin("run", "concurrency") == "default"


def test_file_found_by_walking_up(project):
    path = write(project, "[run]\nconcurrency = 3\n")
    deep = project / "a" / "b"
    deep.mkdir(parents=True)
    cfg = load_config(deep)
    assert cfg.path == path
    assert cfg.get("run", "concurrency") == 3
    assert cfg.origin("run", "concurrency") == str(path)


def test_agent_env_config_names_the_file_and_must_exist(project, tmp_path, monkeypatch):
    other = tmp_path / "elsewhere.toml"
    other.write_text("[run]\nconcurrency = 2\n")
    write(project, "[run]\nconcurrency = 3\n")
    monkeypatch.setenv("AGENT_ENV_CONFIG", str(other))
    assert load_config(project).get("run", "concurrency") == 2
    monkeypatch.setenv("AGENT_ENV_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match="AGENT_ENV_CONFIG names .*missing.toml.*does not exist"):
        load_config(project)


def test_precedence_default_file_env_configure(project, monkeypatch):
    write(project, "[run]\nconcurrency = 3\n[model]\ndefault = 'from-file'\n")
    monkeypatch.setenv("AGENT_ENV_RUN_CONCURRENCY", "5")
    cfg = load_config(project)
    assert cfg.get("run", "concurrency") == 5
    assert cfg.origin("run", "concurrency") == "env AGENT_ENV_RUN_CONCURRENCY"
    assert cfg.get("model", "default") == "from-file"
    configure(run={"concurrency": 7})
    cfg = load_config(project)
    assert cfg.get("run", "concurrency") == 7
    assert cfg.origin("run", "concurrency") == "configure()"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[run\nconcurrency = 3\n", r"config.toml: not valid TOML"),
        (
            "[runn]\nconcurrency = 3\n",
            r"config.toml: unknown section 'runn' \(did you mean 'run'\?\); known sections: ",
        ),
        (
            "[run]\nconcurency = 3\n",
            r"config.toml: \[run\] has unknown key 'concurency' \(did you mean 'concurrency'\?\)",
        ),
        (
            "[run]\nconcurrency = 'many'\n",
            r"config.toml: \[run\] concurrency: expected an integer, got 'many'",
        ),
        ("run = 3\n", r"config.toml: run must be a table"),
        (
            "[stores]\nobject = 's3'\n",
            r"config.toml: \[stores\] object = 's3': .*pip install 'agentenv-framework\[aws\]'",
        ),
        (
            "[stores]\ndocument = 'firestore'\n",
            r"\[stores\] document = 'firestore': .*pip install 'agentenv-framework\[gcp\]'",
        ),
        (
            "[stores]\ndocument = 'sqlit'\n",
            r"unknown document store 'sqlit' \(did you mean 'sqlite'\?\)",
        ),
        (
            "[stores.s3]\nbucket = 'b'\n",
            r"\[stores.s3\] configures 's3', whose plugin is not installed \(or is disabled\); install it with: pip install 'agentenv-framework\[aws\]'",
        ),
        (
            "[stores.sqlit]\npath = 'x'\n",
            r"config.toml: \[stores.sqlit\]: unknown stores backend 'sqlit' \(did you mean 'sqlite'\?\); "
            r"known stores backends: ",
        ),
        (
            "[sandbox]\ndefault = 'docker'\n",
            r"\[sandbox\] default = 'docker': .*agentenv-docker-sandbox",
        ),
        (
            "[plugins.agentenv-nope]\nx = 1\n",
            r"\[plugins.agentenv-nope\]: unknown plugin distribution 'agentenv-nope'( \(did you mean .*\))?; "
            r"installed: ",
        ),
    ],
)
def test_bad_config_fails_naming_file_and_key(project, text, message):
    write(project, text)
    with pytest.raises(ConfigError, match=message):
        load_config(project)


def test_env_var_errors(project, monkeypatch):
    monkeypatch.setenv("AGENT_ENV_RUN_CONCURRENCY", "lots")
    with pytest.raises(
        ConfigError,
        match="environment variable AGENT_ENV_RUN_CONCURRENCY: expected an integer, got 'lots'",
    ):
        load_config(project)
    monkeypatch.delenv("AGENT_ENV_RUN_CONCURRENCY")
    monkeypatch.setenv("AGENT_ENV_RUN_CONCURENCY", "2")
    with pytest.raises(
        ConfigError,
        match=r"AGENT_ENV_RUN_CONCURENCY is not a config setting \(did you mean 'CONCURRENCY'\?\)",
    ):
        load_config(project)
    monkeypatch.delenv("AGENT_ENV_RUN_CONCURENCY")
    monkeypatch.setenv("AGENT_ENV_RUN_ID", "abc")  # unrelated variables are left alone
    load_config(project)


def test_backend_settings_subtable_and_plugin_settings(project, register_plugin):
    class Tracing:
        CONFIG_SECTIONS = {"tracing": {"endpoint": None, "sample": 1.0}}

        @hookimpl
        def agentenv_run_finished(self, record):
            pass

    register_plugin(Tracing(), "tracing", dist="agentenv-tracing")
    write(
        project,
        "[stores.sqlite]\npath = '/tmp/x.db'\n"
        "[tracing]\nendpoint = 'http://t'\n"
        "[plugins.agentenv-tracing]\nanything = [1, 2]\n",
    )
    cfg = load_config(project)
    assert cfg.table("stores")["sqlite"] == {"path": "/tmp/x.db"}
    assert cfg.table("tracing") == {"endpoint": "http://t", "sample": 1.0}
    assert cfg.plugin_settings("agentenv-tracing") == {"anything": [1, 2]}
    assert cfg.plugin_settings("agentenv-other") == {}


def test_plugin_declared_section_validates_keys_and_reads_env(
    project, register_plugin, monkeypatch
):
    class Docker:
        CONFIG_SECTIONS = {"sandbox.fancy": {"network": "bridge", "cpus": 1.0}}

        @hookimpl
        def agentenv_register_sandbox_providers(self, registry):
            class Fancy:
                type = "fancy"

            registry.add(Fancy)

    register_plugin(Docker(), "fancy-plugin")
    monkeypatch.setenv("AGENT_ENV_SANDBOX_FANCY_CPUS", "2.5")
    write(project, "[sandbox]\ndefault = 'fancy'\n[sandbox.fancy]\nnetwork = 'none'\n")
    cfg = load_config(project)
    assert cfg.table("sandbox") == {
        "default": "fancy",
        "fancy": {"network": "none", "cpus": 2.5},
        "local": {"root": None, "bwrap": "bwrap", "allow_unisolated": False},  # built-in local
    }
    write(project, "[sandbox.fancy]\nnetwrok = 'none'\n")
    with pytest.raises(
        ConfigError,
        match=r"unknown key 'netwrok' \(did you mean 'network'\?\); known keys \(declared by plugin 'fancy-plugin'\)",
    ):
        load_config(project)


def test_unknown_table_lookup_suggests(project):
    cfg = load_config(project)
    with pytest.raises(
        ConfigError, match=r"unknown config section \[stors\] \(did you mean 'stores'\?\)"
    ):
        cfg.table("stors")


def test_env_and_secret_references(project, monkeypatch, plugin_manager, agent_env_home):
    write(
        project,
        "[model]\nbase_url = 'env:MODEL_URL?http://localhost:8000/v1'\n"
        "api_key = 'secret:openai-key'\ndefault = 'env:MODEL_NAME'\n",
    )
    monkeypatch.setenv("AGENT_ENV_SECRET_OPENAI_KEY", "sk-test-123")
    monkeypatch.setenv("MODEL_NAME", "smollm")
    cfg = load_config(project)
    secrets = plugin_manager.stores.get("secret", "env")({}, home=agent_env_home)

    async def main():
        return await cfg.resolved_table("model", secrets)

    assert anyio.run(main) == {
        "base_url": "http://localhost:8000/v1",
        "api_key": "sk-test-123",
        "default": "smollm",
    }
    monkeypatch.delenv("MODEL_NAME")
    with pytest.raises(
        ConfigError,
        match=r"\[model\].default = 'env:MODEL_NAME': environment variable MODEL_NAME is not set",
    ):
        anyio.run(main)
    monkeypatch.setenv("MODEL_NAME", "smollm")
    monkeypatch.delenv("AGENT_ENV_SECRET_OPENAI_KEY")
    with pytest.raises(ConfigError, match=r"secret 'openai-key' not found in the env secret store"):
        anyio.run(main)


def test_rows_mask_secrets_but_keep_backend_names(project):
    write(project, "[model]\napi_key = 'sk-literal'\nbase_url = 'env:URL'\n")
    rows = {(r["section"], r["key"]): r for r in load_config(project).rows()}
    assert rows[("model", "api_key")]["value"] == "****"
    assert rows[("model", "base_url")]["value"] == "env:URL"
    assert rows[("stores", "secret")]["value"] == "env"


def test_litellm_variables_fill_model_only_when_unset(project, monkeypatch):
    monkeypatch.setenv("LITELLM_BASE_URL", "http://proxy:4000")
    monkeypatch.setenv("LITELLM_API_KEY", "sk-proxy")
    cfg = load_config(project)
    assert cfg.get("model", "base_url") == "http://proxy:4000"
    assert cfg.origin("model", "api_key") == "env LITELLM_API_KEY"
    assert {(r["key"], r["value"]) for r in cfg.rows() if r["section"] == "model"} >= {
        ("api_key", "****")
    }
    write(project, "[model]\nbase_url = 'http://vllm:8000/v1'\n")
    assert load_config(project).get("model", "base_url") == "http://vllm:8000/v1"


def test_declared_plugin_settings_have_defaults_and_env(project, register_plugin, monkeypatch):
    class Shout:
        CONFIG_SECTIONS = {"plugins.agentenv-shout": {"suffix": "!", "times": 1}}

    register_plugin(Shout(), "shout", dist="agentenv-shout")
    assert load_config(project).plugin_settings("agentenv-shout") == {"suffix": "!", "times": 1}
    monkeypatch.setenv("AGENT_ENV_PLUGINS_AGENTENV_SHOUT_TIMES", "3")
    write(project, "[plugins.agentenv-shout]\nsuffix = '?'\n")
    cfg = load_config(project)
    assert cfg.plugin_settings("agentenv-shout") == {"suffix": "?", "times": 3}
    write(project, "[plugins.agentenv-shout]\ntimes = 'x'\n")
    with pytest.raises(ConfigError, match=r"\[plugins.agentenv-shout\] times: expected an integer"):
        load_config(project)


def test_section_of_a_disabled_plugin_says_so(project, plugin_manager, register_plugin):
    class Tracing:
        CONFIG_SECTIONS = {"tracing": {"endpoint": None}}

    plugin_manager.disable("tracing")
    register_plugin(Tracing(), "tracing")
    write(project, "[tracing]\nendpoint = 'http://t'\n")
    with pytest.raises(
        ConfigError,
        match=r"unknown section 'tracing'.*\(plugins that failed or are disabled: tracing \(disabled\)\)",
    ):
        load_config(project)
