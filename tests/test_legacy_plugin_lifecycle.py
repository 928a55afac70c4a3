"""agentenv-plugin-lifecycle with agentenv-legacy: `plugin add` takes a distribution written for
the existing product's entry-point groups for a plugin, and so does its install probe."""

from __future__ import annotations

from pathlib import Path

SITE = Path(__file__).parents[1] / "plugins" / "legacy" / "tests" / "fixtures" / "legacy-site"


def test_plugin_add_takes_a_legacy_plugin_for_a_plugin(tmp_path):
    import zipfile

    from agentenv_plugin_lifecycle.specs import parse_spec

    wheel = tmp_path / "legacy_greeter-1.4.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        info = SITE / "legacy_greeter-1.4.0.dist-info"
        for name in ("METADATA", "entry_points.txt"):
            archive.write(info / name, f"legacy_greeter-1.4.0.dist-info/{name}")
    assert parse_spec(str(wheel)).entry_points == (
        "agent_env.envs:browser",
        "agent_env.explorer_plugins:greetings-page",
        "agent_env.task_steps:explode",
        "agent_env.task_steps:greet",
    )
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "legacy-x"\n'
        '[project.entry-points."agent_env.task_steps"]\nx = "legacy_x:X"\n'
        '[project.entry-points.console_scripts]\nx = "legacy_x:main"\n'
    )
    assert parse_spec(str(project)).entry_points == ("agent_env.task_steps:x",)


def test_the_install_probe_counts_a_legacy_distribution_as_a_plugin(monkeypatch):
    import logging

    from agentenv_plugin_lifecycle import probe

    monkeypatch.syspath_prepend(str(SITE))
    monkeypatch.setattr(logging.getLogger("agent_env"), "disabled", False)  # probe disables it
    for var in ("AGENT_ENV_STRICT_PLUGINS", "AGENT_ENV_DISABLE_PLUGINS"):
        monkeypatch.setenv(var, "")  # restored afterwards (the probe pops them)
    found = probe.snapshot()
    assert "agent_env.task_steps:greet" in found["entry_points"]["legacy-greeter"]
    (row,) = [p for p in found["plugins"] if p["name"] == "legacy-greeter"]
    assert (row["format"], row["status"]) == ("legacy", "ok")
