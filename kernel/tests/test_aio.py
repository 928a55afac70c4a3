"""`agent_env.aio`: work in threads and shielded work keep anyio's semantics on plain asyncio:
a cancellation that arrives meanwhile waits for the work and is delivered afterwards, with its
message, and asyncio's timeouts and anyio's scopes around it still end where they should."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

import anyio
import pytest

from agent_env import aio


def run(coro):
    return asyncio.run(coro)


def test_to_thread_returns_what_the_call_returns_and_raises_what_it_raises():
    async def main():
        name = await aio.to_thread(lambda: threading.current_thread().name)
        with pytest.raises(ZeroDivisionError):
            await aio.to_thread(lambda: 1 / 0)
        return name

    name = run(main())
    assert name.startswith("agent-env-worker") and aio.is_worker(
        next(t for t in threading.enumerate() if t.name == name)
    )


def test_a_cancelled_to_thread_waits_for_the_thread_then_is_cancelled():
    finished: list[float] = []

    def slow() -> str:
        time.sleep(0.3)
        finished.append(time.monotonic())
        return "done"

    async def main():
        task = asyncio.ensure_future(aio.to_thread(slow))
        await asyncio.sleep(0.05)
        task.cancel("stop")
        with pytest.raises(asyncio.CancelledError) as caught:
            await task
        return time.monotonic(), caught.value

    ended, error = run(main())
    assert finished and finished[0] <= ended  # the thread returned before the task ended
    assert error.args == ("stop",)


def test_abandon_on_cancel_gives_up_at_once():
    release = threading.Event()

    async def main():
        task = asyncio.ensure_future(aio.to_thread(release.wait, abandon_on_cancel=True))
        await asyncio.sleep(0.05)
        task.cancel()
        started = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - started

    try:
        assert run(main()) < 0.2
    finally:
        release.set()


def test_shielded_work_finishes_and_the_cancellation_comes_at_the_next_await():
    steps: list[str] = []

    async def cleanup() -> str:
        await asyncio.sleep(0.2)
        steps.append("cleaned")
        return "result"

    async def body():
        try:
            await asyncio.sleep(30)
        finally:
            got = await aio.shielded(cleanup())
            steps.append(f"got {got}")

    async def main():
        task = asyncio.ensure_future(body())
        await asyncio.sleep(0.05)
        task.cancel("first")
        await asyncio.sleep(0.05)
        task.cancel("again, during the clean-up")
        with pytest.raises(asyncio.CancelledError):
            await task
        return task.cancelling()

    run(main())
    assert steps == ["cleaned", "got result"]


def test_a_value_returned_under_cancellation_is_kept_and_the_next_await_is_cancelled():
    kept: list[str] = []

    async def body():
        kept.append(await aio.shielded(asyncio.sleep(0.2, result="kept")))
        await asyncio.sleep(0)  # the delayed cancellation lands here
        kept.append("never")

    async def main():
        task = asyncio.ensure_future(body())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())
    assert kept == ["kept"]


def test_shielded_with_a_timeout_cancels_the_work_and_returns_none():
    async def main():
        started = time.monotonic()
        got = await aio.shielded(asyncio.sleep(30, result="late"), timeout=0.1)
        return got, time.monotonic() - started

    got, took = run(main())
    assert got is None and took < 5


def test_an_asyncio_timeout_around_shielded_work_still_raises_timeout_error():
    async def main():
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await aio.shielded(asyncio.sleep(0.2))
                await asyncio.sleep(30)  # the timeout's cancellation lands here
        return asyncio.current_task().cancelling()

    assert run(main()) == 0


def test_an_anyio_scope_around_shielded_work_ends_there_without_spinning():
    """anyio cancels level-triggered (again at every await) and knows its own cancellation by
    its message; shielded work under its cancelled scope is not cancelled over and over, and
    the scope swallows the cancellation that comes after it."""
    cancels: list[int] = []

    async def body():
        try:
            await asyncio.sleep(30)
        finally:
            await aio.shielded(asyncio.sleep(0.2))
            cancels.append(asyncio.current_task().cancelling())

    async def main():
        with anyio.move_on_after(0.05) as scope:
            await body()
        return scope.cancelled_caught, asyncio.current_task().cancelling()

    caught, left = run(main())
    assert caught and left == 0
    assert cancels and cancels[0] <= 3, cancels


def test_the_console_exit_does_not_wait_for_idle_workers(tmp_path):
    """Like anyio's worker threads, the pool's threads do not hold the process at exit: the
    console's fast exit is taken (the ordinary one raises SystemExit, exit 4 here)."""
    script = (
        "import asyncio, time\n"
        "from agent_env import aio\n"
        "from agent_env.cli.main import exit_now\n"
        "asyncio.run(aio.to_thread(time.sleep, 0))\n"
        "try:\n"
        "    exit_now(3)\n"
        "except SystemExit:\n"
        "    raise SystemExit(4)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert done.returncode == 3, done.stderr


def test_a_forked_child_gets_pools_of_its_own():
    script = (
        "import asyncio, os\n"
        "from agent_env import aio\n"
        "asyncio.run(aio.to_thread(os.getpid))\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os._exit(0 if asyncio.run(aio.to_thread(os.getpid)) == os.getpid() else 1)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "raise SystemExit(os.waitstatus_to_exitcode(status))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
