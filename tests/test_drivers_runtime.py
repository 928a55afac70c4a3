"""The computer driver runtime without Docker: how it finds the driver class, starts the apps on
the display it was given, refuses bad input before starting anything, and the names a driver
module imports (`Image`, the two refusals, `@computer_driver`)."""

from __future__ import annotations

import json
import re
import sys

import pytest

from agentenv_protocol.computer import (
    ComputerDriverEnvironment,
    DeliveryFailed,
    DeviceUnavailable,
    Display,
    Image,
    ReadyCheck,
    capture,
    click,
    computer_driver,
    display,
    drag,
    press,
    runtime,
    scroll,
    type_text,
)

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


def test_image_turns_raw_pixels_into_the_frames_pillow_image():
    bgra = bytes([10, 20, 30, 255, 1, 2, 3, 255])  # two pixels, blue first
    image = Image(2, 1, bgra, "BGRA")
    assert image.mode == "RGB" and image.size == (2, 1)
    assert [image.getpixel((0, 0)), image.getpixel((1, 0))] == [(30, 20, 10), (3, 2, 1)]
    assert Image(1, 1, b"\x01\x02\x03", "RGB").getpixel((0, 0)) == (1, 2, 3)
    with pytest.raises(ValueError, match=r"Image 2x2 RGB: 3 bytes of pixels, expected 12"):
        Image(2, 2, b"\x00\x00\x00", "RGB")
    with pytest.raises(ValueError, match="Image mode 'CMYK'"):
        Image(1, 1, b"\x00" * 4, "CMYK")


def test_the_two_refusals_carry_their_wire_fields():
    gone = DeviceUnavailable("the X server is unavailable")
    assert (gone.code, gone.retryable, gone.applied) == ("device_unavailable", True, "no")
    dropped = DeliveryFailed("the connection dropped while sending input")
    assert (dropped.code, dropped.retryable, dropped.applied) == (
        "delivery_failed",
        False,
        "unknown",
    )
    assert str(dropped) == "the connection dropped while sending input"
    assert ReadyCheck("xtest", True, "XTEST available").as_dict() == {
        "name": "xtest",
        "ok": True,
        "detail": "XTEST available",
    }


def test_computer_driver_names_the_card_and_keeps_the_platforms():
    supports = [{"os": {"type": "linux", "display": ["x11"]}, "arch": ["amd64"]}]

    @computer_driver(name="tiny", supports=supports)
    class Tiny(ComputerDriverEnvironment):
        @display
        def screen(self):
            return Display(4, 2)

        @capture
        def grab(self):
            return Image(4, 2, bytes(24), "RGB")

        @click
        def click_at(self, *args): ...

        @drag
        def drag_along(self, *args): ...

        @scroll
        def scroll_at(self, *args): ...

        @type_text
        def type_in(self, text): ...

        @press
        def chord(self, keys): ...

    assert Tiny.supports == supports
    assert Tiny().card.name == "tiny"
    with pytest.raises(TypeError, match="is not a subclass of ComputerDriverEnvironment"):
        computer_driver(name="x")(dict)
