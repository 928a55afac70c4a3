"""Behaviour of the `local` provider beyond the contract: /app mapping and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_env.errors import SandboxError
from agent_env.sandbox import SandboxSpec
from agent_env.sandboxes.local import LocalProvider

pytestmark = pytest.mark.anyio


@pytest.fixture
def provider(tmp_path: Path) -> LocalProvider:
    return LocalProvider({}, home=tmp_path)


@pytest.fixture
async def box(provider):
    sandbox = await provider.create(SandboxSpec(env_vars={"DATA": "/app/data"}))
    yield sandbox
    await sandbox.teardown()


async def test_app_maps_into_the_work_folder_under_home(box, tmp_path):
    assert box.folder == tmp_path / "sandboxes" / box.id
    await box.write_file("/app/a.txt", b"x")
    assert (box.folder / "a.txt").read_bytes() == b"x"
    await box.write_file("rel/b.txt", b"y")
    assert (box.folder / "rel" / "b.txt").read_bytes() == b"y"


async def test_app_is_rewritten_in_commands_arguments_and_env(box):
    result = await box.exec('echo /app/x "$APP_DIR" "$DATA" /application /apps', timeout=10)
    folder = str(box.folder)
    assert result.stdout.split() == [
        f"{folder}/x",
        folder,
        f"{folder}/data",
        "/application",
        "/apps",
    ]
    listed = await box.exec(["ls", "/app"], timeout=10)
    assert listed.exit_code == 0


@pytest.mark.parametrize("path", ["/etc/passwd", "/tmp/x", "/", "/app/../etc/passwd", "../x"])
async def test_paths_outside_app_are_refused(box, path):
    with pytest.raises(SandboxError, match="outside /app|escapes /app"):
        await box.write_file(path, b"no")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (SandboxSpec(image="python:3.11-slim"), "cannot run image"),
        (SandboxSpec(cpus=1.0), "cannot enforce a cpus limit"),
        (SandboxSpec(memory="512m"), "cannot enforce a memory limit"),
        (SandboxSpec(pids=64), "cannot enforce a pids limit"),
        (SandboxSpec(network="none"), "cannot enforce network 'none'"),
        (SandboxSpec(settings={"gpu": True}), "does not understand settings"),
    ],
)
async def test_limits_it_cannot_enforce_are_refused_and_nothing_is_created(provider, spec, message):
    with pytest.raises(SandboxError, match=message):
        await provider.create(spec)
    assert not provider.root.exists() or list(provider.root.iterdir()) == []


def test_unknown_provider_setting_names_the_close_one(tmp_path):
    with pytest.raises(SandboxError) as caught:
        LocalProvider({"rot": "/x"}, home=tmp_path)
    assert str(caught.value) == (
        "[sandbox.local] has unknown setting 'rot' (did you mean 'root'?); known: root, bwrap, "
        "allow_unisolated"
    )
    assert not (tmp_path / "sandboxes").exists()


def test_a_provider_setting_of_the_wrong_type(tmp_path):
    with pytest.raises(SandboxError) as caught:
        LocalProvider({"root": 5}, home=tmp_path)
    assert str(caught.value) == "[sandbox.local] root: expected a string, got 5"


async def test_root_setting_moves_work_folders(tmp_path):
    provider = LocalProvider({"root": str(tmp_path / "elsewhere")}, home=tmp_path / "home")
    box = await provider.create(SandboxSpec())
    try:
        assert box.folder.parent == tmp_path / "elsewhere"
    finally:
        await box.teardown()
    assert list((tmp_path / "elsewhere").iterdir()) == []


async def test_processes_that_leave_their_group_are_still_killed_at_teardown(tmp_path):
    """Unisolated (an isolated command's PID namespace ends with it, see the next test), a
    process that left the command's group outlives it until teardown."""
    box = await LocalProvider({"bwrap": ""}, home=tmp_path).create(SandboxSpec())
    await box.exec("setsid sleep 300 > /dev/null 2>&1 < /dev/null & sleep 0.3", timeout=10)
    from agent_env.sandboxes import procs

    escaped = procs.pids_with_env("AGENTENV_SANDBOX", box.id)
    assert escaped, "setsid sleep should still run after exec returned"
    await box.teardown()
    assert not any(procs.alive(pid) for pid in escaped)


async def test_an_isolated_commands_escaped_processes_end_with_it(box):
    """Under bubblewrap a command is its PID namespace's main process: what it left running,
    `setsid` or not, is killed when it exits."""
    import anyio

    from agent_env.sandboxes import procs

    assert box.isolated
    await box.exec("setsid sleep 300 > /dev/null 2>&1 < /dev/null & sleep 0.3", timeout=10)
    with anyio.fail_after(5):
        while procs.pids_with_env("AGENTENV_SANDBOX", box.id):
            await anyio.sleep(0.05)


async def test_an_isolated_sandbox_leaves_no_process_behind_its_teardown(provider):
    """Servers and what they left running (`setsid` or not) end with an isolated sandbox's
    teardown, which ends each PID namespace without scanning every host process."""
    from agent_env.sandboxes import procs

    box = await provider.create(SandboxSpec())
    assert box.isolated
    await box.start_process("setsid sleep 300 > /dev/null 2>&1 < /dev/null & exec sleep 300")
    await box.exec("setsid sleep 300 > /dev/null 2>&1 < /dev/null & sleep 0.3", timeout=10)
    assert procs.pids_with_env("AGENTENV_SANDBOX", box.id), "the server should be running"
    await box.teardown()
    assert procs.pids_with_env("AGENTENV_SANDBOX", box.id) == []


async def test_processes_a_fast_path_started_with_the_marker_end_at_teardown(provider):
    """A process started by other means with the sandbox's environment (how the core-steps
    fork server starts envs: not under bwrap) is found by its marker and killed."""
    import subprocess
    import time

    from agent_env.sandboxes import procs

    box = await provider.create(SandboxSpec())
    env = box.process_environment()
    started = subprocess.Popen(
        ["sleep", "300"], env=env, start_new_session=True, stdout=subprocess.DEVNULL
    )
    try:
        # the child carries the marker once it has exec'd (until then /proc shows the
        # environment of this process, which forked it): wait for that, as a loaded CI may lag
        deadline = time.monotonic() + 10
        while procs.pids_with_env("AGENTENV_SANDBOX", box.id) != [started.pid]:
            assert time.monotonic() < deadline, procs.pids_with_env("AGENTENV_SANDBOX", box.id)
            time.sleep(0.01)
        await box.teardown()
        assert started.wait(timeout=5) is not None
    finally:
        if started.poll() is None:
            started.kill()
            started.wait()


async def test_cancelling_an_exec_kills_its_process_group(box):
    import anyio

    from agent_env.sandboxes import procs

    with anyio.move_on_after(0.3):
        await box.exec("sleep 300 & sleep 301", timeout=60)
    await anyio.sleep(0.05)
    assert procs.pids_with_env("AGENTENV_SANDBOX", box.id) == []
    assert (await box.exec("echo still usable", timeout=10)).stdout == "still usable\n"


async def test_process_logs_show_what_a_crashed_server_printed(box):
    await box.start_process("echo starting; echo 'Traceback: boom' >&2; exit 1", port=0)
    import anyio

    for _ in range(100):
        if "boom" in await box.process_logs():
            break
        await anyio.sleep(0.02)
    logs = await box.process_logs()
    assert "starting" in logs and "Traceback: boom" in logs


async def test_a_torn_down_sandbox_refuses_work_and_is_not_recreated(provider, tmp_path):
    box = await provider.create(SandboxSpec())
    await box.teardown()
    (tmp_path / "f.txt").write_text("x")
    for attempt in (
        box.write_file("/app/a.txt", b"x"),
        box.copy_in(tmp_path / "f.txt", "/app/f.txt"),
        box.exec("true", timeout=5),
        box.start_process("sleep 1"),
    ):
        with pytest.raises(SandboxError, match="torn down"):
            await attempt
    assert not box.folder.exists()


async def test_huge_output_is_capped_not_buffered_whole(box, monkeypatch):
    from agent_env.sandboxes.local import sandbox as local

    monkeypatch.setattr(local, "MAX_OUTPUT", 1000)
    result = await box.exec("head -c 5000000 /dev/zero | tr '\\0' x; echo done >&2", timeout=30)
    assert result.exit_code == 0 and result.stderr == "done\n"
    assert result.stdout.startswith("x" * 1000) and result.stdout.endswith("[output truncated]\n")
    assert len(result.stdout) < 2000


async def test_servers_get_the_port_and_a_loopback_host(box):
    import anyio

    url = (await box.start_process('echo "$MCP_HOST $MCP_PORT $PORT"', port=9000)).url
    port = url.rsplit(":", 1)[1]
    for _ in range(100):
        if await box.process_logs():
            break
        await anyio.sleep(0.02)
    assert (await box.process_logs()).split() == ["127.0.0.1", port, port]


async def test_an_exited_servers_log_has_its_last_bytes_even_those_held_for_redaction(box):
    """A server's output reaches its log through a FIFO this process copies, holding back an
    end that may begin a secret. Once the server exited, its log must have everything it
    printed: its last words are what a deploy error shows (they were "(empty)" under load)."""
    import anyio

    from agent_env.redact import Redactor

    keeper = Redactor(["last words of a secret-4c1d"])  # the process redactor masks it too
    process = await box.start_process("printf 'exiting: last words'; exit 3", port=0)
    with anyio.fail_after(30):
        while await process.exit_code() is None:
            await anyio.sleep(0.02)
    assert (await process.logs()).endswith("exiting: last words")
    assert keeper.secrets  # alive until here
