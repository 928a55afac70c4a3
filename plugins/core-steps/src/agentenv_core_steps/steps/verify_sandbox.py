"""`verify_sandbox`: check files and commands in a sandbox and score them.

Criterion types: `probe_file_exists` / `probe_dir_exists` (every one of `paths`),
`probe_file_contains` (`re.search(expected, <first path's text>)`), `bash_cmd_succeeds`
(`bash -c bash_cmd` in `base_dir` exits 0). Other types are kept as `skipped` rows and not
scored, so one criteria list can be shared with a response verifier.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.errors import SandboxError
from agent_env.models import VerifierStep
from agentenv_core_steps.criteria import SANDBOX_CRITERIA, criterion_shape_problems
from agentenv_core_steps.sandbox_paths import WORKDIR, escapes
from agentenv_core_steps.targets import sandbox_for

HANDLED = ("probe_file_exists", "probe_dir_exists", "probe_file_contains", "bash_cmd_succeeds")


def _outcome(passed: bool, justification: str) -> dict[str, Any]:
    return {"score": 1.0 if passed else 0.0, "result": passed, "justification": justification}


@attrs.frozen(kw_only=True)
class VerifySandbox(VerifierStep):
    type: ClassVar[str] = "verify_sandbox"

    criteria: list[dict[str, Any]] = attrs.field(factory=list)
    sandbox_name: str | None = None
    agent_name: str | None = None
    base_dir: str = "/app"
    shell_timeout_seconds: int = 120

    def check(self, bundle: Any) -> list[str]:
        problems = []
        if self.sandbox_name and self.agent_name and self.agent_name != "default-agent":
            problems.append("set either agent_name or sandbox_name, not both")
        if escapes(self.base_dir, WORKDIR):
            problems.append(f"base_dir: {self.base_dir!r} climbs out of {WORKDIR} with '..'")
        for index, criterion in enumerate(self.criteria):
            where = f"criteria[{index}]"
            shape = criterion_shape_problems(criterion, where, SANDBOX_CRITERIA, skip_others=True)
            if shape:
                problems.extend(shape)
                continue
            kind = criterion.get("type")
            if kind in ("probe_file_exists", "probe_dir_exists", "probe_file_contains"):
                paths = criterion["paths"]
                if not paths:
                    problems.append(f"{where}: paths: a non-empty list is required")
                for i, path in enumerate(paths):
                    if not path:
                        problems.append(f"{where}: paths[{i}]: must not be empty")
                    elif escapes(path, self.base_dir):
                        problems.append(
                            f"{where}: paths[{i}]: {path!r} leads outside base_dir "
                            f"{self.base_dir!r}; give an absolute path or one inside it"
                        )
                if kind == "probe_file_contains":
                    pattern = criterion.get("expected", criterion.get("value"))
                    try:
                        re.compile(pattern or "")
                    except (re.error, TypeError) as e:
                        problems.append(f"{where}: expected: not a regular expression: {e}")
            elif kind == "bash_cmd_succeeds" and not criterion.get("bash_cmd"):
                problems.append(f"{where}: bash_cmd: required")
        return problems

    async def execute(self, ctx: StepContext) -> None:
        sandbox = await sandbox_for(
            ctx,
            sandbox_name=self.sandbox_name,
            agent_name=self.agent_name,
            single_sandbox_fallback=True,
        )
        results = []
        for index, criterion in enumerate(self.criteria):
            row = {"id": str(criterion.get("id", index)), **criterion, "criterion_index": index}
            if "criterion" in criterion and "description" not in row:
                row["description"] = criterion["criterion"]
            if criterion.get("type") not in HANDLED:
                row.update(
                    skipped=True,
                    justification=f"type {criterion.get('type')!r} is not handled here",
                )
                results.append(row)
                continue
            try:
                outcome = await self._evaluate(sandbox, criterion)
            except (SandboxError, OSError, ValueError) as e:
                outcome = _outcome(False, f"evaluator error: {e}"[:300])
            row.update(outcome, skipped=False)
            results.append(row)
        counted = [r for r in results if not r["skipped"]]
        passed = sum(1 for r in counted if r["result"])
        self.record(ctx, results, f"{passed}/{len(counted)} criteria passed", counted=counted)

    def _path(self, path: str) -> str:
        return path if path.startswith("/") else f"{self.base_dir.rstrip('/')}/{path}"

    async def _evaluate(self, sandbox: Any, criterion: dict[str, Any]) -> dict[str, Any]:
        kind = criterion["type"]
        if kind == "bash_cmd_succeeds":
            command = criterion.get("bash_cmd") or ""
            if not command:
                return _outcome(False, "no bash_cmd")
            result = await sandbox.exec(
                ["bash", "-c", f"cd {shlex.quote(self.base_dir)} && ({command}\n)"],
                timeout=self.shell_timeout_seconds,
            )
            if result.timed_out:
                return _outcome(False, f"timed out after {self.shell_timeout_seconds}s")
            return _outcome(
                result.exit_code == 0, f"exit={result.exit_code}; stderr={result.stderr[:200]}"
            )
        paths = criterion.get("paths") or []
        if not paths:
            return _outcome(False, "no paths specified")
        if kind == "probe_file_contains":
            pattern = criterion.get("expected") or criterion.get("value") or ""
            try:
                text = (await sandbox.read_file(self._path(paths[0]))).decode(errors="replace")
            except (FileNotFoundError, IsADirectoryError) as e:
                return _outcome(False, f"could not read {paths[0]}: {e}")
            try:
                found = re.search(pattern, text) is not None
            except re.error as e:
                return _outcome(False, f"invalid regex {pattern!r}: {e}")
            return _outcome(found, ("contains" if found else "does not contain") + f" {pattern!r}")
        flag = "-d" if kind == "probe_dir_exists" else "-e"
        missing = []
        for path in paths:
            result = await sandbox.exec(
                ["test", flag, self._path(path)], timeout=self.shell_timeout_seconds
            )
            if result.exit_code != 0:
                missing.append(path)
        if missing:
            return _outcome(False, f"missing: {missing}")
        return _outcome(True, "all paths exist")
