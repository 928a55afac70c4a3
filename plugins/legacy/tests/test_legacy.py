"""Plugins written for the existing product's entry-point groups (`agent_env.task_steps`, ...).

`fixtures/legacy-site` is a real installed distribution (`legacy-greeter`: a dist-info with
`entry_points.txt`, and its package), put on the path of a real `agent-env` process. Its step
types run through the legacy adapter; its entry points in unsupported groups are reported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agent_env.errors import PluginError
from agent_env.plugins import PluginManager

FIXTURES = Path(__file__).parent / "fixtures"
SITE = FIXTURES / "legacy-site"
BUNDLE = FIXTURES / "legacy-bundle"
AGENT_ENV = Path(sys.executable).with_name("agent-env")

ENVS_REASON = (
    "agent_env.envs entry point 'browser' (legacy_greeter.browser:BrowserEnv): not supported "
    "(env types (its `Env` classes) of the existing product): its `Env` classes deploy"
)
EXPLORER_REASON = (
    "agent_env.explorer_plugins entry point 'greetings-page' "
    "(legacy_greeter.explorer:GreetingsPage): not supported (routes for its explorer web UI of "
    "the existing product): this agent-env has no explorer UI"
)


@pytest.fixture
def agent_env(tmp_path):
    home = tmp_path / "home"
    log = tmp_path / "greeter.log"

    def run(*args: str, site: Path = SITE) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
        env.update(AGENT_ENV_HOME=str(home), PYTHONPATH=str(site), GREETER_LOG=str(log))
        return subprocess.run(
            [str(AGENT_ENV), *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )

    run.log = log  # type: ignore[attr-defined]
    return run


def test_a_legacy_step_type_runs_through_agent_env_run(agent_env):
    result = agent_env("run", str(BUNDLE), "--task", "greet")
    assert result.returncode == 0, result.stderr
    assert "[legacy greet] hello Ada!\n[legacy greet] hello Grace.\n" in result.stdout
    assert "[greet] first: ok" in result.stderr and "[greet] second: ok" in result.stderr
    instance = result.stdout.split()[-1]
    assert instance.startswith("ti-")

    # what the steps recorded: the file the fixture writes, and the run record's outputs
    lines = [json.loads(line) for line in agent_env.log.read_text().splitlines()]
    assert [(line["step"], line["greeting"]) for line in lines] == [
        ("first", "hello Ada!"),
        ("second", "hello Grace."),
    ]
    assert lines[1]["seen_before"] == ["hello Ada!"]  # the context's metadata is carried on
    assert {line["instance"] for line in lines} == {instance}
    shown = agent_env("runs", "show", instance, "--json")
    assert shown.returncode == 0, shown.stderr
    outputs = json.loads(shown.stdout)["instance"]["outputs"]
    assert outputs["second"] == {"metadata": {"greetings": ["hello Ada!", "hello Grace."]}}


def test_a_legacy_step_that_raises_fails_its_task_naming_the_step(agent_env):
    result = agent_env("run", str(BUNDLE), "--task", "explode")
    assert result.returncode == 1
    assert (
        "failed at step 'bang': legacy step type 'explode' raised RuntimeError: "
        "the legacy step gave up" in result.stdout
    )


def test_bad_legacy_step_fields_are_bundle_errors_and_nothing_runs(agent_env, tmp_path):
    bundle = tmp_path / "bad"
    (bundle / "tasks").mkdir(parents=True)
    (bundle / "README.md").write_text("bad fields\n")
    steps = [{"id": "a", "type": "greet", "nmae": "x"}, {"id": "b", "type": "greet", "name": " "}]
    (bundle / "tasks" / "t.json").write_text(json.dumps(steps))
    result = agent_env("run", str(bundle))
    assert result.returncode == 2
    assert "tasks/t.json: step 'a': unknown field 'nmae' (did you mean 'name'?)" in result.stderr
    assert "tasks/t.json: step 'b': name must not be blank" in result.stderr  # config_problems
    assert not agent_env.log.exists()
    assert json.loads(agent_env("runs", "list", "--json").stdout) == []


def test_plugin_list_marks_the_legacy_plugin_and_check_names_unsupported_groups(agent_env):
    table = agent_env("plugin", "list")
    assert table.returncode == 0, table.stderr
    row = next(line for line in table.stdout.splitlines() if line.startswith("legacy-greeter "))
    assert row.split()[1:4] == ["legacy-greeter", "1.4.0", "ok"]
    assert row.endswith("(legacy format) step_types: explode, greet")
    assert f"legacy-greeter: {ENVS_REASON}" in table.stdout
    assert f"legacy-greeter: {EXPLORER_REASON}" in table.stdout

    data = {p["name"]: p for p in json.loads(agent_env("plugin", "list", "--json").stdout)}
    greeter = data["legacy-greeter"]
    assert (greeter["format"], greeter["status"]) == ("legacy", "ok")
    assert greeter["registered"] == {"step_types": ["explode", "greet"]}
    assert greeter["errors"][0].startswith(ENVS_REASON)
    assert greeter["errors"][1] == EXPLORER_REASON
    assert data["core-steps"]["format"] == "native"

    shown = agent_env("plugin", "show", "legacy-greeter").stdout.splitlines()
    assert "format        legacy" in shown and "step_types    explode, greet" in shown
    assert "hooks         agentenv_register_step_types" in shown

    check = agent_env("plugin", "check", "--json")
    assert check.returncode == 1
    report = json.loads(check.stdout)
    assert report["ok"] is False
    assert [p for p in report["problems"] if "legacy-greeter" in p] == [
        f"plugin 'legacy-greeter': {greeter['errors'][0]}",
        f"plugin 'legacy-greeter': {EXPLORER_REASON}",
    ]


# -- in-process: distributions written onto sys.path per test ------------------------------


def _dist(root: Path, name: str, entry_points: str, modules: dict[str, str]) -> None:
    info = root / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))


@pytest.fixture
def site(tmp_path, monkeypatch):
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delenv("AGENT_ENV_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("AGENT_ENV_STRICT_PLUGINS", raising=False)
    yield root
    for name in [m for m in sys.modules if m.startswith("legacyfix_")]:
        del sys.modules[name]


STEPS = """
    from agent_env.task_step import TaskStep

    class Good(TaskStep):
        type = "good"

        @classmethod
        def from_dict(cls, data):
            return cls(**cls._base_from_dict(data))

        async def execute(self, context):
            return context

    class Misnamed(Good):
        type = "other"

    class NoFromDict(TaskStep):
        type = "no_from_dict"

        async def execute(self, context):
            return context

    class NotAStep:
        type = "not_a_step"
"""


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (
            "misnamed = legacyfix_steps:Misnamed",
            "Misnamed has type 'other'; its entry point must be named 'other'",
        ),
        ("no_from_dict = legacyfix_steps:NoFromDict", "NoFromDict must implement from_dict"),
        (
            "not_a_step = legacyfix_steps:NotAStep",
            "is not a subclass of agent_env.task_step.TaskStep",
        ),
        (
            "gone = legacyfix_missing:Gone",
            "not installed: module 'legacyfix_missing' does not exist",
        ),
    ],
)
def test_an_unusable_legacy_step_fails_its_plugin_only(site, entry, why):
    _dist(site, "legacy-good", "[agent_env.task_steps]\ngood = legacyfix_steps:Good\n", {})
    _dist(site, "legacy-bad", f"[agent_env.task_steps]\n{entry}\n", {"legacyfix_steps": STEPS})
    pm = PluginManager()
    assert pm.step_types.owner("good") == "legacy-good"
    bad = pm.get("legacy-bad")
    assert bad.status == "failed" and bad.format == "legacy"
    (error,) = bad.errors
    assert error.startswith("agentenv_register_step_types raised LegacyStepTypeError: ")
    assert "agent_env.task_steps entry point" in error and why in error
    assert entry.split(" = ")[0] not in pm.step_types


def test_a_legacy_step_failure_is_fatal_in_strict_mode(site):
    _dist(site, "legacy-bad", "[agent_env.task_steps]\ngone = legacyfix_gone:X\n", {})
    with pytest.raises(PluginError, match="plugin 'legacy-bad': .*legacyfix_gone"):
        PluginManager(strict=True).step_types  # noqa: B018 - building the registry is the test


def test_only_unsupported_groups_make_an_unsupported_plugin_that_is_never_imported(site):
    _dist(
        site,
        "legacy-sandboxes",
        "[agent_env.sandbox_providers]\nmodal = legacyfix_modal:Modal\n",
        {"legacyfix_modal": "raise RuntimeError('must not be imported')\n"},
    )
    pm = PluginManager()
    pm.step_types  # noqa: B018
    info = pm.get("legacy-sandboxes")
    assert (info.status, info.format) == ("unsupported", "legacy")
    assert "agent_env.sandbox_providers entry point 'modal'" in info.errors[0]
    assert "register a provider with `agentenv_register_sandbox_providers`" in info.errors[0]
    assert "legacyfix_modal" not in sys.modules
    assert "legacy-sandboxes (unsupported)" in pm.not_loaded()


def test_a_disabled_legacy_plugin_is_not_imported(site, monkeypatch):
    _dist(
        site,
        "legacy-good",
        "[agent_env.task_steps]\ngood = legacyfix_steps:Good\n",
        {"legacyfix_steps": STEPS},
    )
    monkeypatch.setenv("AGENT_ENV_DISABLE_PLUGINS", "legacy-good")
    pm = PluginManager()
    assert "good" not in pm.step_types
    assert pm.get("legacy-good").status == "disabled"
    assert "legacyfix_steps" not in sys.modules
    monkeypatch.delenv("AGENT_ENV_DISABLE_PLUGINS")
    enabled = PluginManager()
    assert "good" in enabled.step_types
    enabled.disable_entry_points()
    assert "good" not in enabled.step_types and "legacy-good" not in enabled.plugins


FIELDS = """
    from agent_env.task_step import TaskStep

    class Fields(TaskStep):
        type = "fields"

        def __init__(self, id, version=None, *, target, tags=[], retries=2, **base):
            super().__init__(id, version, **base)
            self.target, self.tags, self.retries = target, tags, retries

        @classmethod
        def from_dict(cls, data):
            fields = {k: data[k] for k in ("target", "tags", "retries") if k in data}
            return cls(**cls._base_from_dict(data), **fields)

        async def execute(self, context):
            self.tags.append("ran")  # must not leak into the next step's default
            context.metadata[self.id] = {"target": self.target, "tags": self.tags}
"""


def test_adapted_fields_follow_the_legacy_constructor(site):
    from agent_env.convert import StructureProblems, structure_step

    _dist(
        site,
        "legacy-fields",
        "[agent_env.task_steps]\nfields = legacyfix_fields:Fields\n",
        {"legacyfix_fields": FIELDS},
    )
    types = PluginManager().step_types
    with pytest.raises(StructureProblems) as missing:
        structure_step({"id": "a", "type": "fields", "retry": 3}, types)
    assert missing.value.problems == [
        "step 'a': target: required",
        "step 'a': unknown field 'retry' (did you mean 'retries'?)",
    ]
    step = structure_step(
        {"id": "a", "type": "fields", "target": "t", "version": 2, "depends_on": ["x"]}, types
    )
    assert (step.target, step.tags, step.retries, step.depends_on) == ("t", [], 2, ["x"])
    other = structure_step({"id": "b", "type": "fields", "target": "u"}, types)
    assert other.tags == [] and other.tags is not step.tags
