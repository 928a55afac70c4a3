"""Issue 35: a user who copies the existing product's all-local `.agentenv/config.toml` keeps
working. That file is not shipped in its wheel or sdist (its README links it on GitHub:
`.agentenv/config.example.toml`). `PUBLISHED` holds the settings that file sets (its keys and
values; its comments left out). `ALL_LOCAL` is written for this test from the sections and keys
the existing config loader declares (every one of them, with the all-local choices its docs
describe). Every daily command runs with each, with every installed plugin (the explorer's
`[explorer]` too), and what we do not use is named in one warning.
"""

from __future__ import annotations

import json

import pytest

from agentenv_testing.stores import run_with_config

ALL_LOCAL = """
runner = "local"

[stores]
document = "local"
object = "local"
image = "local"
secret = "local"

[model]
base_url = "http://127.0.0.1:4000"
api_key = "env:LITELLM_API_KEY"
default = "a-model"
roles = { judge = "a-judge-model" }
params = { temperature = 0.0 }

[conversations]
default_human_a2a_url = "http://127.0.0.1:9999/a2a"

[agents]
default_a2a_agent_id = "claude-code"

[sandbox]
default = "local"
agent_default = "local"

[state.providers]

[envs]
impls = []

[artifacts]
impls = []

[task_steps]
impls = []

[explorer]
port = 8234
cors_origins = []
allowed_hosts = []
static_dir = "ui/dist"
"""


PUBLISHED = """
[stores]
document = "local"
object   = "local"
image    = "local"
secret   = "local"

[sandbox]
default       = "local"
agent_default = "local"

[agents]
default_a2a_agent_id = "a2a-default"

[runner]
impl = "agent_env.runner.local_runner:LocalRunner"

[runner.config]
workers = 2

[explorer]
port = 8234
"""


@pytest.mark.parametrize(
    "args", [("config", "show"), ("runs", "list"), ("run", "hello")], ids=" ".join
)
def test_the_published_example_runs_every_daily_command(tmp_path, args):
    done = run_with_config(tmp_path, PUBLISHED, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr.count("accepted for compatibility and ignored") == 1, done.stderr
    for named in ('[stores] image = "local"', "[sandbox] agent_default", "[runner]"):
        assert named in done.stderr


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("all-local")


@pytest.mark.parametrize(
    "args",
    [("config", "show"), ("runs", "list"), ("task", "list"), ("env", "list"), ("run", "hello")],
    ids=" ".join,
)
def test_every_daily_command_runs_and_warns_once(folder, args):
    done = run_with_config(folder, ALL_LOCAL, *args, LITELLM_API_KEY="k")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr.count("accepted for compatibility and ignored") == 1, done.stderr
    for named in ('[stores] image = "local"', "[model] roles", "[explorer] cors_origins"):
        assert named in done.stderr
    # translated, not ignored
    for translated in ('document = "local"', "[agents]", "[sandbox] default"):
        assert translated not in done.stderr


def test_plugin_list_runs_without_reading_it(folder):
    done = run_with_config(folder, ALL_LOCAL, "plugin", "list")
    assert done.returncode == 0, done.stderr
    assert "agentenv-explorer" in done.stdout


def test_the_translated_values_are_the_ones_in_use(folder):
    done = run_with_config(folder, ALL_LOCAL, "config", "show", "--json", LITELLM_API_KEY="k")
    assert done.returncode == 0, done.stderr
    shown = {(s["section"], s["key"]): s for s in json.loads(done.stdout)["settings"]}
    for where, value in [
        (("stores", "document"), "sqlite"),
        (("stores", "object"), "filesystem"),
        (("stores", "secret"), "env"),
        (("agents", "default"), "claude-code"),
        (("explorer", "port"), 8234),
        (("model", "default"), "a-model"),
    ]:
        assert shown[where]["value"] == value, where
        assert shown[where]["origin"] == str(folder / "config.toml"), where


def test_a_misspelled_explorer_key_is_still_an_error(folder):
    done = run_with_config(folder, "[explorer]\ncors_origin = []\n", "runs", "list")
    assert done.returncode != 0
    assert "cors_origin" in done.stderr and "did you mean 'cors_origins'" in done.stderr
