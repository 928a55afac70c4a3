"""The local provider under bubblewrap: what a sandboxed process sees, and the unisolated path
(bwrap missing, by config) that refuses untrusted agents unless the user opted out."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from agent_env.errors import SandboxError
from agent_env.sandbox import SandboxSpec
from agent_env.sandboxes.local import LocalProvider
from agent_env.testing.require import require

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _bwrap():
    require(None if shutil.which("bwrap") else "bubblewrap is missing (scripts/services.sh)")


@pytest.fixture
async def box(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_ENV_SECRET_HOSTONLY", "leaked-value")
    monkeypatch.setenv("SOME_HOST_SETTING", "leaked-too")
    provider = LocalProvider({}, home=tmp_path / "home")
    other = await provider.create(SandboxSpec())
    sandbox = await provider.create(SandboxSpec(env_vars={"MINE": "/app/x"}))
    (tmp_path / "home" / "documents.sqlite3").write_text("solution")
    (other.folder / "theirs.txt").write_text("other sandbox")
    yield sandbox, other, provider
    await sandbox.teardown()
    await other.teardown()


async def sh(sandbox, line: str) -> str:
    done = await sandbox.exec(line, timeout=60)
    assert done.exit_code == 0, done.stderr
    return done.stdout.strip()


async def test_the_work_folder_is_writable_at_its_path_and_at_app(box):
    sandbox, _, _ = box
    assert sandbox.isolated
    assert await sh(sandbox, "echo hi > /app/a && cat a && pwd") == f"hi\n{sandbox.folder}"
    assert (sandbox.folder / "a").read_text() == "hi\n"
    assert await sh(sandbox, 'echo "$MINE $HOME $APP_DIR"') == (
        f"{sandbox.folder}/x {sandbox.folder} {sandbox.folder}"
    )


async def test_only_the_given_environment_reaches_the_process(box):
    sandbox, _, _ = box
    env = await sh(sandbox, "env")
    assert "leaked" not in env
    assert "AGENT_ENV_" not in env
    assert f"PATH={os.environ['PATH']}" in env.splitlines()


async def test_the_home_other_sandboxes_and_the_hosts_tmp_are_invisible(box, tmp_path):
    sandbox, other, provider = box
    home = provider.root.parent
    listing = await sh(
        sandbox, f"ls -A {home}; ls -A {provider.root}; ls -A {other.folder} || true"
    )
    assert listing.split() == ["sandboxes", sandbox.id]
    (tmp_path / "host-file").write_text("x")
    assert await sh(sandbox, f"test -e {tmp_path}/host-file && echo seen || echo unseen") == (
        "unseen"
    )
    await sh(sandbox, "echo mine > /tmp/private")
    assert not os.path.exists("/tmp/private")


async def test_processes_live_in_their_own_pid_namespace_without_capabilities(box):
    sandbox, _, _ = box
    pids = await sh(sandbox, "ls /proc | grep -E '^[0-9]+$' | wc -l")
    assert int(pids) <= 5  # bwrap's init, sh, ls, grep, wc
    assert await sh(sandbox, "echo $$") != str(os.getpid())
    done = await sandbox.exec(f"mount -t tmpfs none {sandbox.folder}", timeout=30)
    assert done.exit_code != 0
    done = await sandbox.exec("touch /usr/agentenv-isolation-test", timeout=30)
    assert done.exit_code != 0 and not os.path.exists("/usr/agentenv-isolation-test")


async def test_a_missing_command_still_exits_127_and_a_server_is_refused(box):
    sandbox, _, _ = box
    done = await sandbox.exec(["no-such-command-here"], timeout=30)
    assert done.exit_code == 127
    with pytest.raises(SandboxError, match="cannot start"):
        await sandbox.start_process(["no-such-command-here"])


async def test_a_server_answers_on_loopback_and_dies_with_teardown(tmp_path):
    import urllib.request

    provider = LocalProvider({}, home=tmp_path)
    sandbox = await provider.create(SandboxSpec())
    server = "import http.server as h; h.HTTPServer(('127.0.0.1', int(__import__('os').environ['PORT'])), h.SimpleHTTPRequestHandler).serve_forever()"  # noqa: E501
    await sandbox.write_file("/app/index.html", b"from the sandbox")
    process = await sandbox.start_process(["python3", "-c", server], port=0)
    import anyio

    body = b""
    with anyio.fail_after(30):
        while not body:
            try:
                body = urllib.request.urlopen(process.url, timeout=1).read()
            except OSError:
                await anyio.sleep(0.05)
    assert body == b"from the sandbox"
    await sandbox.teardown()
    assert await process.exit_code() is not None


@pytest.mark.parametrize("setting", ["", "/nonexistent/bwrap"])
async def test_without_bwrap_processes_run_unwrapped_and_untrusted_agents_are_refused(
    tmp_path, setting
):
    provider = LocalProvider({"bwrap": setting}, home=tmp_path)
    sandbox = await provider.create(SandboxSpec())
    try:
        assert not sandbox.isolated
        assert not provider.isolation.available
        with pytest.raises(SandboxError) as caught:
            provider.refuse_untrusted("hostile")
        message = str(caught.value)
        assert "agent 'hostile' is untrusted and local sandboxes cannot be isolated" in message
        assert "--allow-unisolated" in message and "allow_unisolated = true" in message
        reason = "bwrap is empty" if not setting else "'/nonexistent/bwrap') is not on PATH"
        assert reason in message
    finally:
        await sandbox.teardown()
    LocalProvider({"bwrap": setting, "allow_unisolated": True}, home=tmp_path).refuse_untrusted(
        "hostile"
    )
    LocalProvider({}, home=tmp_path).refuse_untrusted("hostile")  # isolated: nothing to refuse


async def test_a_probe_is_remembered_only_when_it_succeeds_and_for_that_bwrap(
    tmp_path, monkeypatch
):
    """A bwrap that cannot create namespaces is probed (and refused) every time; one that can
    is remembered in the cache folder, until the executable changes."""
    from agent_env.sandboxes.local import isolation

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fake = tmp_path / "bwrap"
    refusing = "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"
    working = f'#!/bin/sh\nexec {shutil.which("bwrap")} "$@"\n'

    def probe(script: str) -> isolation.Probe:
        fake.write_text(script)
        fake.chmod(0o755)
        isolation.probe.cache_clear()  # a new process, as far as the probe knows
        return isolation.probe(str(fake))

    try:
        found = probe(refusing)
        assert not found.available and "No permissions to create new namespace" in found.reason
        assert not isolation._known_good_file().exists()
        assert probe(working).available
        remembered = isolation._known_good_file().read_text()
        assert str(fake) in remembered and "boot_id" in remembered
        assert not probe(refusing).available  # another file: probed again, not trusted
        assert isolation._known_good_file().read_text() == remembered
    finally:
        isolation.probe.cache_clear()


async def test_a_bad_isolation_setting_is_refused_with_its_name(tmp_path):
    with pytest.raises(SandboxError, match=r"has unknown setting 'bwarp' \(did you mean 'bwrap'"):
        LocalProvider({"bwarp": "x"}, home=tmp_path)
    with pytest.raises(SandboxError, match="allow_unisolated"):
        LocalProvider({"allow_unisolated": "maybe"}, home=tmp_path)


async def test_an_isolated_env_is_not_forked_from_the_warm_server(tmp_path, monkeypatch):
    """A fork of the warm server would run outside the sandbox's namespaces."""
    from agentenv_core_steps.envs import mcp_server

    monkeypatch.setenv("AGENTENV_ENV_FORKSERVER", "1")
    sandbox = await LocalProvider({}, home=tmp_path).create(SandboxSpec())
    try:
        argv = [sys.executable, "server.py"]
        assert await mcp_server._fork(None, sandbox, argv, {}) is None
    finally:
        await sandbox.teardown()


async def test_read_only_folders_are_seen_read_only_and_bad_ones_refused(tmp_path):
    tool = tmp_path / "tool"
    tool.mkdir()
    (tool / "run.sh").write_text("echo tool ran\n")
    provider = LocalProvider({}, home=tmp_path / "home")
    plain = await provider.create(SandboxSpec())
    sandbox = await provider.create(SandboxSpec(settings={"read_only": [str(tool)]}))
    try:
        assert await sh(sandbox, f"sh {tool}/run.sh") == "tool ran"
        denied = await sandbox.exec(f"touch {tool}/x", timeout=60)
        assert denied.exit_code != 0 and not (tool / "x").exists()
        assert (await plain.exec(f"sh {tool}/run.sh", timeout=60)).exit_code != 0
        plain.add_read_only([str(tool)])  # a sandbox another step made
        assert await sh(plain, f"sh {tool}/run.sh") == "tool ran"
        again = await provider.connect({"id": sandbox.id})  # kept across a reconnect
        assert again.read_only == (str(tool),)
    finally:
        await sandbox.teardown()
        await plain.teardown()
    for bad in ("relative/path", [1], "/not/a/list"):
        with pytest.raises(SandboxError, match="read_only"):
            await provider.create(SandboxSpec(settings={"read_only": bad}))
    with pytest.raises(SandboxError, match="does not understand settings"):
        await provider.create(SandboxSpec(settings={"read_onyl": [str(tool)]}))
