"""Step types for engine end-to-end tests, registered as a plugin (in-process via
`register_plugin`, or in a subprocess via `launch.py`). Each appends its id to `trace`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

import anyio
import attrs

from agent_env import hookimpl
from agent_env.errors import StepFailed
from agent_env.models import Step
from agent_env.sandbox import SandboxSpec


def _trace(path: str, step_id: str) -> None:
    if path:
        with open(path, "a") as f:
            f.write(step_id + "\n")


@attrs.frozen(kw_only=True)
class TBox(Step):
    """Creates a local sandbox with a long-running process; records its host pid (the handle's:
    `$$` in an isolated sandbox is its own PID namespace's) once it wrote /app/server.pid."""

    type: ClassVar[str] = "t_box"
    name: str = "box"
    trace: str = ""

    async def execute(self, ctx) -> None:
        _trace(self.trace, self.id)
        box = await ctx.create_sandbox(self.name, SandboxSpec())
        server = await box.start_process(["sh", "-c", "echo $$ > /app/server.pid; exec sleep 1000"])
        with anyio.fail_after(10):
            while True:
                try:
                    pid = (await box.read_file("/app/server.pid")).decode().strip()
                    if pid:
                        break
                except FileNotFoundError:
                    pass
                await anyio.sleep(0.02)
        ctx.set("outputs", self.id, value={"pid": server.pid})


@attrs.frozen(kw_only=True)
class TWrite(Step):
    type: ClassVar[str] = "t_write"
    sandbox: str = "box"
    path: str
    text: str
    trace: str = ""

    async def execute(self, ctx) -> None:
        _trace(self.trace, self.id)
        box = await ctx.sandbox(self.sandbox)
        await box.write_file(self.path, self.text.encode())
        ctx.set("outputs", self.id, value=self.text)


@attrs.frozen(kw_only=True)
class TWait(Step):
    """Waits until `release` exists (so a test can kill the run while it waits)."""

    type: ClassVar[str] = "t_wait"
    release: str
    timeout: float = 60.0
    trace: str = ""

    async def execute(self, ctx) -> None:
        _trace(self.trace, self.id)
        deadline = time.monotonic() + self.timeout
        while not Path(self.release).exists():
            if time.monotonic() > deadline:
                raise StepFailed(self.id, f"{self.release} did not appear", failure_class="timeout")
            await anyio.sleep(0.05)


@attrs.frozen(kw_only=True)
class TCheck(Step):
    """A verifier: score 1 when the sandbox file holds `text`."""

    type: ClassVar[str] = "t_check"
    is_verifier: ClassVar[bool] = True
    verifier_id: str
    sandbox: str = "box"
    path: str
    text: str
    trace: str = ""

    async def execute(self, ctx) -> None:
        _trace(self.trace, self.id)
        box = await ctx.sandbox(self.sandbox)
        try:
            got = (await box.read_file(self.path)).decode()
        except FileNotFoundError:
            got = None
        ok = got == self.text
        ctx.record_verifier(self.verifier_id, [{"id": "content", "result": ok}], 1.0 if ok else 0.0)


@attrs.frozen(kw_only=True)
class TLightBox(Step):
    """Creates a local sandbox (no process) and writes `text` into it; sleeps `pause` seconds
    first so a test can kill a run in the middle of many trials."""

    type: ClassVar[str] = "t_light_box"
    text: str = "x"
    pause: float = 0.0
    trace: str = ""

    async def execute(self, ctx) -> None:
        _trace(self.trace, self.text)
        if self.pause:
            await anyio.sleep(self.pause)
        box = await ctx.create_sandbox("box", SandboxSpec())
        await box.write_file("/app/out.txt", self.text.encode())


@attrs.frozen(kw_only=True)
class TCoin(Step):
    """A verifier whose verdict is data: `value` (e.g. "{trial}") passes when it is in
    `passing` (comma separated), else scores `low`."""

    type: ClassVar[str] = "t_coin"
    is_verifier: ClassVar[bool] = True
    verifier_id: str = "coin"
    value: str
    passing: str
    low: float = 0.0
    trace: str = ""

    async def execute(self, ctx) -> None:
        _trace(self.trace, self.value)
        ok = self.value in self.passing.split(",")
        ctx.record_verifier(
            self.verifier_id, [{"id": "coin", "result": ok}], 1.0 if ok else self.low
        )


@attrs.frozen(kw_only=True)
class TFlaky(Step):
    """Fails like broken infrastructure (a SandboxError) the first `failures` times it runs
    for a given `key` (counted in the file `counter`), or with `failure_class` if given."""

    type: ClassVar[str] = "t_flaky"
    counter: str
    key: str = "k"
    failures: int = 1
    failure_class: str = ""

    async def execute(self, ctx) -> None:
        from agent_env.errors import SandboxError

        path = Path(f"{self.counter}.{self.key}")
        seen = int(path.read_text()) if path.exists() else 0
        path.write_text(str(seen + 1))
        if seen < self.failures:
            if self.failure_class:
                raise StepFailed(self.id, f"failure {seen + 1}", failure_class=self.failure_class)
            raise SandboxError(f"docker daemon hiccup {seen + 1}")


@hookimpl
def agentenv_register_step_types(registry):
    for cls in (TBox, TWrite, TWait, TCheck, TLightBox, TCoin, TFlaky):
        registry.add(cls)
