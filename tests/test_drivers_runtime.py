"""The computer driver runtime without Docker: how it finds the driver class, starts the apps on
the display it was given, and refuses bad input before starting anything."""

from __future__ import annotations

import json
import re
import sys

import pytest

from agentenv_protocol.computer import runtime

SERVING_DRIVER = """
import os, pathlib, time

class Recorder:
    def serve(self):
        out = pathlib.Path(os.environ["RECORD_TO"])
        for _ in range(100):  # the app writes its line once it runs
            if (out / "app.txt").exists():
                break
            time.sleep(0.05)
        (out / "driver.txt").write_text(os.environ["DISPLAY"])
"""


@pytest.fixture
def clean_imports():
    before = set(sys.modules)
    path = list(sys.path)
    yield
    for name in set(sys.modules) - before:
        if name in ("recorder_driver", "drv"):
            del sys.modules[name]
    sys.path[:] = path


def test_a_driver_class_is_found_by_file_or_by_module(tmp_path, clean_imports):
    (tmp_path / "drv.py").write_text("class A:\n    pass\nclass B:\n    pass\n")
    assert runtime.load_driver("drv.py:B", tmp_path).__name__ == "B"
    assert runtime.load_driver("drv:A", tmp_path).__name__ == "A"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("drv.py", "expected 'file.py:Class' or 'package.module:Class'"),
        ("drv.py:not a name", "expected 'file.py:Class'"),
        ("missing.py:A", "no file 'missing.py' in"),
        ("drv.py:C", "drv.py has no 'C' (classes: ['A', 'B'])"),
    ],
)
def test_a_bad_driver_spec_is_refused_naming_it(tmp_path, clean_imports, spec, message):
    (tmp_path / "drv.py").write_text("class A:\n    pass\nclass B:\n    pass\n")
    with pytest.raises(ValueError, match=re.escape(message)):
        runtime.load_driver(spec, tmp_path)


def test_apps_must_be_a_json_list_of_commands():
    assert runtime.read_apps(None) == []
    assert runtime.read_apps('[["xterm", "-geometry", "80x24"]]') == [
        ["xterm", "-geometry", "80x24"]
    ]
    for bad in ('["xterm"]', "[[]]", '{"a": 1}', "[[1]]"):
        with pytest.raises(ValueError, match="AGENTENV_DISPLAY_APPS: expected a JSON list"):
            runtime.read_apps(bad)


def test_on_a_given_display_the_apps_start_then_the_driver_serves(
    tmp_path, monkeypatch, clean_imports
):
    (tmp_path / "recorder_driver.py").write_text(SERVING_DRIVER)
    monkeypatch.setenv("DISPLAY", ":42")
    monkeypatch.setenv("RECORD_TO", str(tmp_path))
    app = ["sh", "-c", f'echo "$DISPLAY" > {tmp_path / "app.txt"}']
    monkeypatch.setenv(runtime.APPS_ENV, json.dumps([app]))
    assert runtime.run("recorder_driver.py:Recorder", tmp_path) == 0
    assert (tmp_path / "app.txt").read_text() == ":42\n"
    assert (tmp_path / "driver.txt").read_text() == ":42"


def test_without_xvfb_the_runtime_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no Xvfb on it
    assert runtime.main(["drv.py:A"]) == 1
    assert "Xvfb is not installed (Debian package `xvfb`)" in capsys.readouterr().err
    assert runtime.main([]) == 2


def test_an_app_that_cannot_start_stops_the_runtime_naming_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DISPLAY", ":42")
    monkeypatch.setenv(runtime.APPS_ENV, json.dumps([["/no/such/app"]]))
    assert runtime.main(["drv.py:A"]) == 1
    assert "app ['/no/such/app'] could not start on :42" in capsys.readouterr().err
