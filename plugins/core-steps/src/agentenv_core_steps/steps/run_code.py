"""`run_code`: run a Python script's `run(input)` in a sandbox and keep its JSON result.

The function gets `{"args": args, "results": <earlier results by result_id>}`; its return
value is stored at `script_results.<result_id>`. The target is `sandbox_name` (an addition to
the existing fields), else the env's (`env_id`) or the agent's (`agent_name`) sandbox, else the
task's only sandbox; with none of them the script runs in a throwaway sandbox of the default
provider. Files are staged in `/app/.agentenv-run_code-<step id>/` and removed afterwards.
"""

from __future__ import annotations

import json
import posixpath
from pathlib import Path
from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.errors import SandboxError, StepFailed
from agent_env.models import Step
from agent_env.sandbox import SandboxSpec
from agentenv_core_steps.targets import artifact_for, sandbox_for

RUNNER = (Path(__file__).parent / "run_code_runner.py").read_bytes()
RESERVED = ("runner.py", "input.json", "output.json")
MAX_OUTPUT_BYTES = 50 * 1024 * 1024
STAGED_SCRIPT = "script.py"


@attrs.frozen(kw_only=True)
class RunCode(Step):
    type: ClassVar[str] = "run_code"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {
        "artifact": ("script_artifact_id",),
        "env": ("env_id",),
    }

    script_artifact_id: str
    script_artifact_version: int | None = None
    script_file: str | None = None
    entrypoint: str = "run"
    args: dict[str, Any] = attrs.field(factory=dict)
    result_id: str | None = None
    timeout_seconds: int = 600
    env_id: str | None = None
    agent_name: str | None = None
    sandbox_name: str | None = None

    def check(self, bundle: Any) -> list[str]:
        artifacts = getattr(bundle, "artifacts", {}) or {}
        ref = self.script_artifact_id
        spec = artifacts.get(ref.rstrip("/").rsplit("/", 1)[-1] if ref.startswith("@") else ref)
        if spec is None:
            return []
        files = [rel for rel in getattr(spec, "files", {})]
        try:
            _entry(spec.kind, files, self.script_file)
        except ValueError as e:
            return [f"script_artifact_id: {e}"]
        return []

    async def execute(self, ctx: StepContext) -> None:
        handle = artifact_for(ctx, self.script_artifact_id)
        if handle.kind == "file":
            staged = {STAGED_SCRIPT: handle.path}
        elif handle.kind == "fileset":
            staged = {
                p.relative_to(handle.path).as_posix(): p
                for p in sorted(handle.path.rglob("*.py"))
                if p.is_file()
            }
        else:
            raise StepFailed(self.id, f"script artifact {handle.name!r} is an {handle.kind}")
        try:
            entry = _entry(handle.kind, list(staged), self.script_file)
        except ValueError as e:
            raise StepFailed(self.id, str(e)) from None

        throwaway = None
        try:
            sandbox = await sandbox_for(
                ctx,
                sandbox_name=self.sandbox_name,
                agent_name=self.agent_name,
                env_id=self.env_id,
                single_sandbox_fallback=True,
            )
        except StepFailed:
            if self.sandbox_name or self.agent_name or self.env_id:
                raise
            throwaway = f"run_code:{self.id}"
            sandbox = await ctx.create_sandbox(throwaway, SandboxSpec())
        try:
            result = await self._run(sandbox, staged, entry, ctx)
        finally:
            if throwaway:
                await ctx.teardown_sandbox(throwaway)
        result_id = self.result_id or self.id
        ctx.set("script_results", result_id, value=result)
        ctx.log(f"{entry}:{self.entrypoint} -> script_results.{result_id}")

    async def _run(
        self, sandbox: Any, staged: dict[str, Path], entry: str, ctx: StepContext
    ) -> Any:
        run_dir = f"/app/.agentenv-run_code-{self.id}"
        script_input = {"args": self.args, "results": ctx.get("script_results", default={}) or {}}
        try:
            await sandbox.exec(["rm", "-rf", run_dir], timeout=60)
            for rel, path in staged.items():
                await sandbox.copy_in(path, posixpath.join(run_dir, rel))
            await sandbox.write_file(f"{run_dir}/input.json", json.dumps(script_input).encode())
            await sandbox.write_file(f"{run_dir}/runner.py", RUNNER)
            done = await sandbox.exec(
                ["python3", f"{run_dir}/runner.py", run_dir, self.entrypoint, entry],
                timeout=self.timeout_seconds,
            )
            if done.timed_out:
                raise StepFailed(self.id, f"timed out after {self.timeout_seconds}s")
            if done.exit_code != 0:
                raise StepFailed(self.id, f"script exited {done.exit_code}: {done.stderr[-1000:]}")
            try:
                raw = await sandbox.read_file(f"{run_dir}/output.json")
            except FileNotFoundError:
                raise StepFailed(self.id, "the script wrote no result") from None
            if len(raw) > MAX_OUTPUT_BYTES:
                raise StepFailed(self.id, f"result exceeds {MAX_OUTPUT_BYTES} bytes")
            try:
                return json.loads(raw)
            except ValueError as e:
                raise StepFailed(self.id, f"result is not JSON: {e}") from None
        except SandboxError as e:
            raise StepFailed(self.id, str(e)) from e
        finally:
            try:
                await sandbox.exec(["rm", "-rf", run_dir], timeout=60)
            except SandboxError:
                pass


def _entry(kind: str, members: list[str], script_file: str | None) -> str:
    """The entry file: the staged script of a `file`; in a fileset `script_file`, else the
    only `.py`, else `run.py`."""
    if kind == "file":
        if script_file:
            raise ValueError(
                f"script_file {script_file!r} is set but the script artifact is one file"
            )
        return STAGED_SCRIPT
    py = sorted(m for m in members if m.endswith(".py"))
    clash = sorted(set(py) & set(RESERVED))
    if clash:
        raise ValueError(f"members {clash} would shadow run_code's own files; rename them")
    if script_file:
        if script_file not in py:
            raise ValueError(
                f"script_file {script_file!r} is not a .py file of the artifact; .py files: {py}"
            )
        return script_file
    if not py:
        raise ValueError(f"the script artifact has no .py file; files: {sorted(members)}")
    if len(py) == 1:
        return py[0]
    runs = [m for m in py if posixpath.basename(m) == "run.py"]
    if len(runs) == 1:
        return runs[0]
    raise ValueError(
        f"the script artifact has {len(py)} .py files and no single run.py; "
        f"set script_file to one of {py}"
    )
