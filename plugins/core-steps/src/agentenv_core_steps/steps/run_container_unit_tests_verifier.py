"""`run_container_unit_tests_verifier`: run a test command in a sandbox; the score is 1.0 when
it exits 0 (else 0.0), or, with `reward_path`, the float the tests wrote to that file.
`setup_commands` run first and must succeed; `result_paths` are read back into the results.
`container_name` names the container: one that `run_docker_container` started next to
`sandbox_name` is where the tests run; otherwise (our sandboxes are one container each) it is
recorded and the tests run in `sandbox_name`. With `reward_path` the score is the reward,
clamped to [0, 1].
"""

from __future__ import annotations

import math
import shlex
from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.errors import SandboxError, StepFailed
from agent_env.models import VerifierStep
from agentenv_core_steps.targets import POSIX_NAME

TAIL = 2000


@attrs.frozen(kw_only=True)
class RunContainerUnitTestsVerifier(VerifierStep):
    type: ClassVar[str] = "run_container_unit_tests_verifier"

    sandbox_name: str
    container_name: str
    command: str
    verifier_id: str = attrs.field(default=attrs.Factory(lambda self: self.id, takes_self=True))
    setup_commands: list[str] = attrs.field(factory=list)
    user: str = "root"
    timeout_sec: int = 300
    env_vars: dict[str, str] = attrs.field(factory=dict)
    result_paths: list[str] = attrs.field(factory=list)
    reward_path: str | None = None

    def check(self, bundle: Any) -> list[str]:
        problems = [
            f"env_vars: {k!r} is not a POSIX environment variable name"
            for k in self.env_vars
            if not POSIX_NAME.match(str(k))
        ]
        if not self.command.strip():
            problems.append("command: required")
        if self.timeout_sec <= 0:
            problems.append("timeout_sec must be positive")
        return problems

    def _wrap(self, command: str) -> list[str]:
        if self.user in ("root", "", None):
            return ["sh", "-c", command]
        return ["su", "-s", "/bin/sh", self.user, "-c", command]

    async def execute(self, ctx: StepContext) -> None:
        problems = self.check(None)
        if problems:
            raise StepFailed(self.id, "; ".join(problems))
        container = ctx.get("containers", self.sandbox_name, self.container_name, "sandbox")
        sandbox = await ctx.sandbox(str(container or self.sandbox_name))
        env = {str(k): str(v) for k, v in self.env_vars.items()}
        try:
            if self.reward_path:  # only what the tests write is the reward, never the agent's
                await sandbox.exec(["rm", "-f", self.reward_path], timeout=self.timeout_sec)
            for setup in self.setup_commands:
                done = await sandbox.exec(self._wrap(setup), env=env, timeout=self.timeout_sec)
                if done.timed_out or done.exit_code != 0:
                    why = "timed out" if done.timed_out else f"exited {done.exit_code}"
                    raise StepFailed(
                        self.id,
                        f"setup command {setup!r} {why}: {done.stderr[-TAIL:]}",
                        failure_class="env",
                    )
            done = await sandbox.exec(self._wrap(self.command), env=env, timeout=self.timeout_sec)
        except SandboxError as e:
            raise StepFailed(self.id, str(e), failure_class="infrastructure") from None
        row: dict[str, Any] = {
            "id": "tests",
            "description": self.command,
            "container_name": self.container_name,
            "exit_code": done.exit_code,
            "timed_out": done.timed_out,
            "stdout": done.stdout[-TAIL:],
            "stderr": done.stderr[-TAIL:],
        }
        passed = done.exit_code == 0 and not done.timed_out
        score = 1.0 if passed else 0.0
        why = f"exit code {done.exit_code}" + (" (timed out)" if done.timed_out else "")
        if self.reward_path:
            try:
                raw = (await sandbox.read_file(self.reward_path)).decode(errors="replace").strip()
                score = float(raw)
                if not math.isfinite(score):  # "nan" / "inf": no score a record can hold
                    raise ValueError(raw)
                why = f"reward {score:g} from {self.reward_path}; {why}"
            except FileNotFoundError:
                score, why = 0.0, f"no reward file at {self.reward_path}; {why}"
            except ValueError:
                score, why = (
                    0.0,
                    f"reward file {self.reward_path} holds {raw[:50]!r}, not a finite number; "
                    f"{why}",
                )
            passed = score >= 1.0
        row.update(result=passed, score=score, justification=why)
        files: dict[str, str | None] = {}
        for path in [*self.result_paths, *([self.reward_path] if self.reward_path else [])]:
            try:
                files[path] = (await sandbox.read_file(path)).decode(errors="replace")[-TAIL:]
            except (FileNotFoundError, SandboxError, IsADirectoryError):
                files[path] = None
        if files:
            row["result_files"] = files
        # a reward is the score itself: the weighted average of one row scored with it
        scorer = (
            attrs.evolve(self, score_aggregator="weighted_average") if self.reward_path else self
        )
        scorer.record(ctx, [row], f"{why} ({shlex.quote(self.command)[:80]})")
