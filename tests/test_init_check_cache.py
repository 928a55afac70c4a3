"""`agent-env init`, `check`, `env check` and `cache list|prune` through the real CLI: a
scaffolded bundle passes a real run and every check, broken bundles and envs fail naming what,
and pruning keeps a cache entry a live sandbox's process uses."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from envs_helpers import agent_env as _agent_env
from envs_helpers import nothing_left, write


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    # every cache this file touches is its own
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return path


def agent_env(home: Path, *args: str):
    return _agent_env(home, *args, timeout=300)


def checks_of(done) -> dict[str, str]:
    return {c["id"]: c["status"] for c in json.loads(done.stdout)["checks"]}


# -- init ------------------------------------------------------------------------------------


def test_a_scaffolded_bundle_checks_and_passes_a_real_run(home, tmp_path):
    folder = tmp_path / "inventory"
    done = agent_env(home, "init", "bundle", "inventory", "--dir", str(folder), "--json")
    assert done.returncode == 0, done.stderr
    written = json.loads(done.stdout)["files"]
    assert "envs/inventory/server.py" in written and "tasks/inventory.json" in written

    checked = agent_env(home, "check", str(folder), "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["tasks"] == ["inventory"]

    run = agent_env(home, "run", str(folder), "--sandbox", "local")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "inventory  passed" in run.stdout
    oracle = agent_env(home, "run", str(folder), "--agent", "oracle", "--json")
    assert oracle.returncode == 0, oracle.stdout + oracle.stderr
    nothing_left(home)

    probed = agent_env(home, "env", "check", str(folder / "envs" / "inventory"), "--json")
    assert probed.returncode == 0, probed.stdout + probed.stderr
    statuses = checks_of(probed)
    assert statuses["data.roundtrip"] == "pass"  # the template seeds data worth a round trip
    assert statuses["tools.add_item.inputSchema"] == "pass"
    assert set(statuses.values()) == {"pass"}
    nothing_left(home)


def test_init_refuses_to_overwrite_and_writes_nothing(home, tmp_path):
    folder = tmp_path / "b"
    assert agent_env(home, "init", "bundle", "b", "--dir", str(folder)).returncode == 0
    server = folder / "envs" / "b" / "server.py"
    server.write_text("# mine\n")
    again = agent_env(home, "init", "bundle", "b", "--dir", str(folder))
    assert again.returncode == 1
    assert "refusing to overwrite" in again.stderr and str(server) in again.stderr
    assert server.read_text() == "# mine\n"

    # one file of an env in the way: none of the env's other files appear
    (folder / "envs" / "other").mkdir()
    (folder / "envs" / "other" / "server.py").write_text("# theirs\n")
    clash = agent_env(home, "init", "env", "other", "--dir", str(folder))
    assert clash.returncode == 1 and "envs/other/server.py" in clash.stderr
    assert not (folder / "envs" / "other" / "env.toml").exists()


def test_init_env_then_task_make_a_valid_bundle(home, tmp_path):
    folder = tmp_path / "mine"
    env = agent_env(home, "init", "env", "shop", "--dir", str(folder), "--json")
    assert env.returncode == 0, env.stderr
    assert sorted(json.loads(env.stdout)["files"]) == ["envs/shop/env.toml", "envs/shop/server.py"]
    task = agent_env(home, "init", "task", "restock", "--env", "shop", "--dir", str(folder))
    assert task.returncode == 0, task.stderr
    assert (folder / "agents" / "scripted" / "agent.toml").is_file()
    # a second task reuses the agent folder instead of refusing
    second = agent_env(home, "init", "task", "refill", "--env", "shop", "--dir", str(folder))
    assert second.returncode == 0, second.stderr
    checked = agent_env(home, "check", str(folder), "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["tasks"] == ["refill", "restock"]


def test_init_rejects_a_bad_name_with_a_suggestion(home, tmp_path):
    done = agent_env(home, "init", "bundle", "my bundle", "--dir", str(tmp_path / "x"))
    assert done.returncode == 1
    assert "did you mean 'my-bundle'" in done.stderr
    assert not (tmp_path / "x").exists()


# -- check -----------------------------------------------------------------------------------


def test_check_lists_every_problem_with_file_step_field(home, tmp_path):
    folder = tmp_path / "bad"
    assert agent_env(home, "init", "bundle", "bad", "--dir", str(folder)).returncode == 0
    task = folder / "tasks" / "bad.json"
    steps = json.loads(task.read_text())
    steps[0]["env_id"] = "bda"  # a typo of an env name
    steps[4]["verifer_id"] = steps[4].pop("verifier_id")  # a typo of a field
    task.write_text(json.dumps(steps))
    with open(folder / "envs" / "bad" / "env.toml", "a") as f:
        f.write("comand = 'x'\n")

    done = agent_env(home, "check", str(folder), "--json")
    assert done.returncode == 2
    problems = json.loads(done.stdout)["problems"]
    by_field = {(p["file"], p["step"], p["field"]): p["message"] for p in problems}
    assert "did you mean 'bad'" in by_field[("tasks/bad.json", "env", "env_id")]
    assert "did you mean 'verifier_id'" in by_field[("tasks/bad.json", "state", "verifer_id")]
    assert ("envs/bad/env.toml", None, "comand") in by_field

    text = agent_env(home, "check", str(folder))
    assert text.returncode == 2
    assert "tasks/bad.json: step 'env': env_id: no env 'bda'" in text.stderr
    # nothing was stored
    listed = agent_env(home, "task", "list", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout)["rows"] == []


def test_check_of_an_installed_bundle_and_of_a_spec_that_is_nothing(home, tmp_path):
    hello = agent_env(home, "check", "hello", "--json")
    assert hello.returncode == 0, hello.stderr
    assert json.loads(hello.stdout)["tasks"] == ["hello"]
    done = agent_env(home, "check", str(tmp_path / "nowhere"))
    assert done.returncode == 2
    assert "nowhere" in done.stderr


# -- env check -------------------------------------------------------------------------------

BROKEN_SERVER = r"""
import json, os
from http.server import BaseHTTPRequestHandler, HTTPServer

CARD = {"name": "broken", "protocolVersion": "2.0", "url": "/agentenv",
        "capabilities": {"tools": [{"name": "bad tool", "inputSchema": {"type": "objekt"}}]}}


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/.well-known/agent-env.json":
            return self._send(200, CARD)
        self._send(404, {"error": "not found"})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path != "/agentenv":
            return self._send(404, {"error": "not found"})
        # every call fails the same way, whatever was asked
        self._send(200, {"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "db down"}})


HTTPServer(("127.0.0.1", int(os.environ["MCP_PORT"])), H).serve_forever()
"""


def test_env_check_names_a_bad_card_schema_and_data_plane(home, tmp_path):
    env = write(
        tmp_path / "broken",
        {"env.toml": 'command = "python server.py"\n', "server.py": BROKEN_SERVER},
    )
    done = agent_env(home, "env", "check", str(env), "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    statuses = checks_of(done)
    failed = {k for k, v in statuses.items() if v == "fail"}
    assert {
        "card.protocolVersion",
        "tools.list",
        "tools.bad tool.name",
        "tools.bad tool.inputSchema",
        "data.get",
        "errors.parse",
        "errors.methodNotFound",
    } <= failed
    assert statuses["card.name"] == "pass" and statuses["start"] == "pass"
    rows = {c["id"]: c["detail"] for c in json.loads(done.stdout)["checks"]}
    assert "'objekt'" in rows["tools.bad tool.inputSchema"]
    assert "db down" in rows["data.get"]
    nothing_left(home)

    text = agent_env(home, "env", "check", str(env))
    assert text.returncode == 1
    assert "fail  card.protocolVersion: protocolVersion: '2.0'" in text.stdout


def test_env_check_names_a_data_plane_handler_that_raises(home, tmp_path):
    assert agent_env(home, "init", "env", "inv", "--dir", str(tmp_path)).returncode == 0
    server = tmp_path / "envs" / "inv" / "server.py"
    server.write_text(
        server.read_text().replace(
            "        self.items.clear()", "        raise RuntimeError('reset is broken')"
        )
    )
    done = agent_env(home, "env", "check", str(server.parent), "--json")
    assert done.returncode == 1
    statuses = checks_of(done)
    assert statuses["data.reset"] == "fail"
    assert statuses["card.protocolVersion"] == "pass" and statuses["data.get"] == "pass"


def test_env_check_names_a_data_plane_that_loses_what_it_is_given(home, tmp_path):
    assert agent_env(home, "init", "env", "inv", "--dir", str(tmp_path)).returncode == 0
    server = tmp_path / "envs" / "inv" / "server.py"
    text = server.read_text()
    assert "        for part in parts:\n" in text
    server.write_text(
        text.replace("        for part in parts:\n", "        for part in parts[:0]:\n")
    )
    done = agent_env(home, "env", "check", str(server.parent), "--json")
    assert done.returncode == 1
    failed = {k for k, v in checks_of(done).items() if v == "fail"}
    assert failed == {"data.roundtrip"}


def test_env_check_of_an_env_already_serving_at_a_url(home, tmp_path):
    import subprocess

    from envs_helpers import wait_for

    from agent_env.net import free_port

    assert agent_env(home, "init", "env", "live", "--dir", str(tmp_path)).returncode == 0
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "server.py"],
        cwd=tmp_path / "envs" / "live",
        env={**os.environ, "MCP_HOST": "127.0.0.1", "MCP_PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(url), what="the env to serve its card")
        done = agent_env(home, "env", "check", url, "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        assert checks_of(done)["data.roundtrip"] == "pass"
        assert server.poll() is None  # left running
    finally:
        server.terminate()
        server.wait(timeout=10)
    gone = agent_env(home, "env", "check", url, "--json")
    assert gone.returncode == 1 and checks_of(gone) == {"card": "fail"}


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url + "/.well-known/agent-env.json", timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


def test_env_check_refuses_what_is_not_an_env(home, tmp_path):
    assert agent_env(home, "init", "bundle", "b", "--dir", str(tmp_path / "b")).returncode == 0
    done = agent_env(home, "env", "check", str(tmp_path / "b"))
    assert done.returncode == 2
    assert "did you mean" in done.stderr and "envs/b" in done.stderr
    # a config typo is the config check's failure; nothing starts
    (tmp_path / "b" / "envs" / "b" / "env.toml").write_text('comand = "python server.py"\n')
    typo = agent_env(home, "env", "check", str(tmp_path / "b" / "envs" / "b"), "--json")
    assert typo.returncode == 1
    assert checks_of(typo) == {"config": "fail"}
    unknown = agent_env(
        home, "env", "check", str(tmp_path / "b" / "envs" / "b"), "--sandbox", "lcoal"
    )
    assert unknown.returncode == 1 and "did you mean 'local'" in unknown.stderr


@pytest.mark.docker
def test_env_check_in_docker(home, tmp_path):
    from agentenv_docker_sandbox.testing import require_docker

    require_docker()
    assert agent_env(home, "init", "env", "dock", "--dir", str(tmp_path)).returncode == 0
    done = agent_env(
        home, "env", "check", str(tmp_path / "envs" / "dock"), "--sandbox", "docker", "--json"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(checks_of(done).values()) == {"pass"}
    nothing_left(home)


# -- cache -----------------------------------------------------------------------------------


def _fake_venv(cache: Path, name: str) -> Path:
    venv = cache / "agentenv" / "venvs" / name
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / "payload").write_bytes(b"x" * 4096)
    return venv


def test_cache_list_and_prune_by_kind_and_age(home, tmp_path):
    cache = tmp_path / "cache"
    old = _fake_venv(cache, "old")
    new = _fake_venv(cache, "new")
    wheel = cache / "agentenv" / "wheels" / "w1"
    write(wheel, {"agentenv_protocol-1.0-py3-none-any.whl": "wheel"})
    week = 8 * 86400
    for path in (old, *old.rglob("*")):
        os.utime(path, (path.lstat().st_atime - week,) * 2, follow_symlinks=False)

    listed = agent_env(home, "cache", "list", "--kind", "venvs", "--kind", "wheels", "--json")
    assert listed.returncode == 0, listed.stderr
    kinds = {k["kind"]: k for k in json.loads(listed.stdout)["kinds"]}
    assert sorted(e["name"] for e in kinds["venvs"]["entries"]) == ["new", "old"]
    assert kinds["venvs"]["size"] >= 2 * 4096
    assert [e["name"] for e in kinds["wheels"]["entries"]] == ["w1"]

    dry = agent_env(
        home, "cache", "prune", "--kind", "venvs", "--older-than", "7d", "--dry-run", "--json"
    )
    assert dry.returncode == 0, dry.stderr
    assert [(r["name"], r["action"]) for r in json.loads(dry.stdout)["entries"]] == [
        ("old", "would remove")
    ]
    assert old.exists()

    pruned = agent_env(home, "cache", "prune", "--kind", "venvs", "--older-than", "7d")
    assert pruned.returncode == 0, pruned.stderr
    assert not old.exists() and new.exists() and wheel.exists()

    typo = agent_env(home, "cache", "prune", "--kind", "venv")
    assert typo.returncode == 1 and "did you mean 'venvs'" in typo.stderr
    assert new.exists()
    bad_age = agent_env(home, "cache", "prune", "--older-than", "7days")
    assert bad_age.returncode == 2 and "30s, 15m, 12h, 7d, 2w" in bad_age.stderr
    assert new.exists() and wheel.exists()


def test_prune_keeps_the_venv_a_live_sandbox_runs(home, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_ENV_HOME", str(home))
    cache = tmp_path / "cache"
    used = _fake_venv(cache, "used")
    idle = _fake_venv(cache, "idle")

    from agent_env.plugins import get_plugin_manager
    from agent_env.sandbox import SandboxSpec
    from agent_env.sandboxes.manager import SandboxManager

    async def main() -> None:
        manager = SandboxManager(get_plugin_manager(), None, home)
        sandbox = await manager.create("holder", SandboxSpec(), "local")
        try:
            python = str(used / "bin" / "python")
            await sandbox.start_process([python, "-c", "import time; time.sleep(120)"])
            held = await anyio.to_thread.run_sync(
                lambda: agent_env(home, "cache", "prune", "--kind", "venvs", "--json")
            )
            assert held.returncode == 0, held.stderr
            rows = {r["name"]: r for r in json.loads(held.stdout)["entries"]}
            assert rows["used"]["action"] == "kept", rows
            assert "live run" in rows["used"]["reason"]
            assert rows["idle"]["action"] == "removed"
            assert used.exists() and not idle.exists()
        finally:
            await manager.teardown_all()

    anyio.run(main)
    # once the sandbox is gone, nothing holds it
    freed = agent_env(home, "cache", "prune", "--kind", "venvs", "--json")
    assert [(r["name"], r["action"]) for r in json.loads(freed.stdout)["entries"]] == [
        ("used", "removed")
    ]
    assert not used.exists()


@pytest.mark.docker
def test_prune_keeps_an_image_a_container_uses(home, tmp_path, monkeypatch):
    import io
    import uuid

    import docker

    from agentenv_docker_sandbox.cache_kind import ImageCache, build_labels
    from agentenv_docker_sandbox.testing import require_docker, tiny_image

    require_docker(None)
    monkeypatch.setenv("AGENT_ENV_HOME", str(home))  # the images are this home's
    client = docker.from_env(timeout=60)
    base = tiny_image()
    suffix = uuid.uuid4().hex[:12]
    tags = [f"agentenv-test/cache-{which}:{suffix}" for which in ("used", "idle")]
    for tag, note in zip(tags, ("used", "idle"), strict=True):
        dockerfile = f"FROM {base}\nLABEL note={note}\n".encode()
        client.images.build(fileobj=io.BytesIO(dockerfile), tag=tag, labels=build_labels(suffix))
    container = client.containers.create(tags[0], command=["/hello.txt"])
    try:
        dry = agent_env(home, "cache", "prune", "--kind", "images", "--dry-run", "--json")
        assert dry.returncode == 0, dry.stderr
        rows = {r["name"]: r for r in json.loads(dry.stdout)["entries"]}
        assert rows[tags[0]]["action"] == "kept"
        assert rows[tags[1]]["action"] == "would remove"

        kind = ImageCache()
        [idle] = [e for e in kind.entries() if e.name == tags[1]]
        kind.remove(idle)
        assert tags[1] not in {e.name for e in kind.entries()}
        with pytest.raises(docker.errors.APIError):  # the daemon refuses too
            kind.remove(next(e for e in kind.entries() if e.name == tags[0]))
    finally:
        container.remove(force=True)
        for tag in tags:
            try:
                client.images.remove(tag, force=True)
            except docker.errors.ImageNotFound:
                pass


def test_check_an_hf_bundle_and_list_the_download(home, tmp_path, monkeypatch):
    from agentenv_hf_hub.testing import LocalHub

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    hub = LocalHub()
    repo = hub.create_repo("org/inv")
    card = "---\nagentenv:\n  bundles:\n    inv:\n      plugins: [agentenv-hf-hub>=1]\n---\n# inv\n"
    steps = [
        {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"},
        {"id": "load", "type": "load_artifact", "sandbox_name": "box", "artifact_id": "greting"},
    ]
    repo.commit(
        {
            "README.md": card,
            "bundles/inv/tasks/t.json": json.dumps(steps),
            "bundles/inv/artifacts/greeting/greeting.txt": "hi\n",
        }
    )
    with hub.serve() as url:
        monkeypatch.setenv("HF_ENDPOINT", url)
        done = agent_env(home, "check", "hf://org/inv", "--json")
    assert done.returncode == 2, done.stdout + done.stderr
    [problem] = json.loads(done.stdout)["problems"]
    assert (problem["file"], problem["step"], problem["field"]) == (
        "tasks/t.json",
        "load",
        "artifact_id",
    )
    assert "did you mean 'greeting'" in problem["message"]

    listed = agent_env(home, "cache", "list", "--kind", "hub", "--json")
    [kind] = json.loads(listed.stdout)["kinds"]
    assert [e["name"] for e in kind["entries"]] == ["org/inv"] and kind["size"] > 0
