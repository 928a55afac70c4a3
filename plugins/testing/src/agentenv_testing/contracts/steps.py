"""`StepTypeContract`: what every step type must do, checked through a real bundle and engine.

Subclass it once per step type. Set the class, the plugin module whose hooks register it, a
valid example step object, and whatever the example needs (earlier steps, bundle files)::

    class TestShout(StepTypeContract):
        step_class = Shout
        plugin_module = "my_plugin.hooks"
        example = {"id": "s", "type": "shout", "text": "hi"}

The run uses real SQLite stores and the real `local` sandbox provider under a temporary home.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest

from agent_env.errors import BundleError
from agent_env.models import Step
from agent_env.testing import run_task

__all__ = ["StepTypeContract", "run_task"]


@pytest.mark.anyio
class StepTypeContract:
    """Naming, model shape, registration, strict fields, and a real run of `example`."""

    step_class: ClassVar[type[Step]]
    plugin_module: ClassVar[str]
    example: ClassVar[dict[str, Any]]
    before: ClassVar[list[dict[str, Any]]] = []
    bundle_files: ClassVar[dict[str, str]] = {}
    runs: ClassVar[bool] = True

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    def plugins(self) -> Any:
        from agent_env.plugins import PluginManager

        plugins = PluginManager(autoload=False)
        plugins.register(importlib.import_module(self.plugin_module), "under-test")
        return plugins

    @pytest.fixture
    def home(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        home = tmp_path / "home"
        monkeypatch.setenv("AGENT_ENV_HOME", str(home))
        return home

    def write_bundle(self, root: Path, step: dict[str, Any]) -> Path:
        files = {**self.bundle_files, "tasks/t.json": json.dumps([*self.before, step])}
        for rel, content in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
        return root

    def problems(self, plugins: Any, root: Path, step: dict[str, Any]) -> list[str]:
        self.write_bundle(root, step)
        with pytest.raises(BundleError) as caught:
            from agent_env.bundles import load_bundle

            load_bundle(str(root), plugins)
        return caught.value.problems or [str(caught.value)]

    def test_type_is_a_snake_case_name(self) -> None:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", self.step_class.type), self.step_class.type
        assert self.example["type"] == self.step_class.type

    def test_is_a_kw_only_attrs_step(self) -> None:
        assert issubclass(self.step_class, Step)
        assert attrs.has(self.step_class)
        assert all(f.kw_only for f in attrs.fields(self.step_class))

    def test_its_declarations_name_its_own_fields(self) -> None:
        from agent_env.testing import check_run_overrides

        check_run_overrides(
            self.step_class
        )  # run_overrides: known run options, fields the class has
        fields = {f.name for f in attrs.fields(self.step_class)}
        for kind, paths in (self.step_class.bundle_refs or {}).items():
            assert kind in ("artifact", "env", "agent", "tool"), (
                f"bundle_refs: unknown kind {kind!r}"
            )
            for path in paths:
                head = path.partition(".")[0].removesuffix("[]")
                assert head in fields, f"bundle_refs[{kind!r}]: no field {head!r} ({path})"

    def test_the_plugin_registers_it(self, plugins: Any) -> None:
        assert plugins.step_types.get(self.step_class.type) is self.step_class

    def test_the_example_loads_from_a_bundle(self, plugins: Any, tmp_path: Path) -> None:
        from agent_env.bundles import load_bundle

        bundle = load_bundle(str(self.write_bundle(tmp_path / "b", self.example)), plugins)
        step = bundle.tasks["t"].steps[-1]
        assert type(step) is self.step_class and step.id == self.example["id"]
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            # steps are values: the engine may share them across trials
            step.id = "changed"  # type: ignore[misc]  # the assignment that must fail

    def test_an_unknown_field_is_rejected_by_name(self, plugins: Any, tmp_path: Path) -> None:
        found = self.problems(plugins, tmp_path / "b", {**self.example, "no_such_field_x": 1})
        assert any("no_such_field_x" in p for p in found), found

    def test_each_required_field_is_named_when_missing(self, plugins: Any, tmp_path: Path) -> None:
        required = [
            f.name
            for f in attrs.fields(self.step_class)
            if f.default is attrs.NOTHING and f.name not in ("id",)
        ]
        for name in required:
            step = {k: v for k, v in self.example.items() if k != name}
            found = self.problems(plugins, tmp_path / name, step)
            assert any(f"{name}: required" in p for p in found), (name, found)

    async def test_the_example_runs_and_leaves_nothing_behind(
        self, plugins: Any, tmp_path: Path, home: Path
    ) -> None:
        if not self.runs:
            pytest.skip("this step type's example does not run here")
        root = self.write_bundle(tmp_path / "b", self.example)
        record, state = await run_task(plugins, root, home)
        assert record["failure"] is None, record["failure"]
        if self.step_class.is_verifier:
            recorded = state.get("verifiers") or {}
            vid = self.example.get("verifier_id")
            assert (vid in recorded) if vid else recorded, recorded
        for sub in ("sandboxes", "leases"):
            folder = home / sub
            assert not folder.exists() or list(folder.iterdir()) == [], sub
