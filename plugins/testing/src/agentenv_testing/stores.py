"""Helpers for testing a store backend end to end, in-tree or third-party: run the real
`agent-env` command against a `[stores]` config, check that opening the stores imports no
SDK, and check that `agent-env run hello` works twice and leaves its data in the backend."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

AGENT_ENV = Path(sys.executable).with_name("agent-env")
#: SDKs a plugin must not import while stores are only registered and opened.
HEAVY_MODULES = ("boto3", "botocore", "docker", "google", "grpc")


def unique_name(prefix: str) -> str:
    """`prefix-<10 hex>`: a bucket, table or secret prefix no other test run uses."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))


def stores_toml(kinds: Mapping[str, str], tables: Mapping[str, Mapping[str, Any]]) -> str:
    """A config file's text: `[stores]` choosing a type per kind, then a `[stores.<type>]`
    table of settings per backend."""
    lines = ["[stores]", *(f"{kind} = {toml_value(name)}" for kind, name in kinds.items())]
    for name, values in tables.items():
        lines.append(f"\n[stores.{name}]")
        lines += [f"{key} = {toml_value(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


def run_agent_env(
    home: Path,
    config: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    drop_env: Iterable[str] = (),
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """Run `agent-env *args` in `home`'s parent folder with `AGENT_ENV_HOME=home` and
    `AGENT_ENV_CONFIG=config`; other `AGENT_ENV_*` variables and those starting with one of
    `drop_env` (e.g. the SDK's own "AWS_") are left out, `env` is added."""
    drop = ("AGENT_ENV_", *drop_env)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    environ.update(AGENT_ENV_HOME=str(home), AGENT_ENV_CONFIG=str(config), **(env or {}))
    return subprocess.run(
        [str(AGENT_ENV), *args],
        env=environ,
        cwd=home.parent,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_with_config(
    tmp_path: Path, config: str, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """`run_agent_env` with `config` written to `tmp_path/config.toml` and the home at
    `tmp_path/home`."""
    path = tmp_path / "config.toml"
    path.write_text(config)
    return run_agent_env(tmp_path / "home", path, *args, env=env, timeout=120)


_OPEN = """
import json, sys
from agent_env.plugins import get_plugin_manager
from agent_env.stores import open_stores
stores = open_stores(json.loads(sys.argv[1]), get_plugin_manager())
classes = {kind: type(getattr(stores, attr)).__name__ for kind, attr in
           (("document", "documents"), ("object", "objects"), ("secret", "secrets"),
            ("image", "images"))}
watch = set(json.loads(sys.argv[2]))
print(json.dumps({"classes": classes,
                  "imported": sorted({m.split(".")[0] for m in sys.modules} & watch)}))
"""


def open_in_fresh_process(
    table: Mapping[str, Any], watch: Iterable[str] = HEAVY_MODULES
) -> tuple[dict[str, str], list[str]]:
    """Open the stores of `table` (a `[stores]` table) in a new interpreter with every
    installed plugin; returns the class name per kind and which of `watch` got imported."""
    proc = subprocess.run(
        [sys.executable, "-c", _OPEN, json.dumps(table), json.dumps(list(watch))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    return found["classes"], found["imported"]


def assert_hello_runs_twice(run: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    """`run("run", "hello")` passes twice; the second run finds the entities unchanged."""
    first = run("run", "hello")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("hello  passed (hello: 1)")
    assert "(new)" in first.stderr
    second = run("run", "hello")
    assert second.returncode == 0, second.stderr
    assert "passed (hello: 1)" in second.stdout
    assert "(new)" not in second.stderr and "unchanged" in second.stderr


async def assert_hello_stored(documents: Any, objects: Any, home: Path) -> None:
    """After `run hello`: one task entity version in `documents`, its artifact blob in
    `objects`, and nothing in the local stores under `home`. Closes both stores."""
    try:
        tasks, blobs = await documents.list("entities-task"), await objects.list()
    finally:
        await documents.close()
        await objects.close()
    assert [key.rpartition("@")[2] for key, _ in tasks] == ["00000001"]
    assert [key.rpartition("/")[0] for key in blobs] == ["blobs/sha256"]
    assert not (home / "documents.sqlite3").exists()
    assert not (home / "objects").exists()


def assert_run_hello_fails(tmp_path: Path, config: str, message: str, **env: str) -> None:
    """`agent-env run hello` with `config` fails with `message` on stderr before anything
    runs: no local document store appears under the home."""
    proc = run_with_config(tmp_path, config, "run", "hello", **env)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert not (tmp_path / "home" / "documents.sqlite3").exists()
