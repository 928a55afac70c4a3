"""`env_outcome_verifier`: run `verify(mcp_url)` from a Python file artifact against a deployed
env, through the run's gateway, and score the rows it returns.

The URL is a capability URL of the gateway's MCP endpoint (`.../k/<token>/mcp`) whose token is
bound to the role `verifier`, so any MCP client works without headers and the gateway's call
log tells the verifier's calls from the agent's. `verify` may be sync or async.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import sys
import threading
import traceback
import uuid
from collections.abc import Iterator
from typing import Any, ClassVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import attrs

from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.models import VerifierStep, compat_ignored
from agentenv_core_steps.faults import gateway_failure_class
from agentenv_core_steps.gateway import gateway_for, issue_token
from agentenv_core_steps.steps.reset_env import deployed_env
from agentenv_core_steps.targets import artifact_for

VERIFY_TIMEOUT = 600.0
ROLE = "verifier"


@attrs.frozen(kw_only=True)
class EnvOutcomeVerifier(VerifierStep):
    type: ClassVar[str] = "env_outcome_verifier"
    bundle_refs: ClassVar[dict[str, tuple[str, ...]]] = {
        "env": ("env_id",),
        "artifact": ("file_artifact_id",),
    }

    env_id: str
    file_artifact_id: str
    file_artifact_version: int | None = None
    prompt_id: str | None = compat_ignored("verify() is not given the prompt's run yet")

    async def execute(self, ctx: StepContext) -> None:
        name, _ = deployed_env(ctx, self.env_id)
        handle = artifact_for(ctx, self.file_artifact_id)
        if handle.kind != "file" or handle.path.suffix != ".py":
            raise StepFailed(
                self.id,
                f"file_artifact_id {self.file_artifact_id!r} must be one "
                f"Python file; it is a {handle.kind} ({handle.path.name})",
            )
        verify = _load_verify(self.id, handle.path)
        gateway = await gateway_for(ctx)
        if name not in gateway.envs:
            raise StepFailed(self.id, f"env {name!r} is not registered with the run's gateway")
        mcp_url = gateway.capability_url(issue_token(ctx, gateway, ROLE))
        try:
            with anyio.fail_after(VERIFY_TIMEOUT):
                if inspect.iscoroutinefunction(verify):
                    rows = await verify(mcp_url)
                else:
                    rows = await _in_daemon_thread(verify, mcp_url)
        except TimeoutError:
            raise StepFailed(
                self.id, f"verify() did not return within {VERIFY_TIMEOUT:g}s"
            ) from None
        except Exception as e:  # noqa: BLE001 - the verifier's bug fails this step with its trace
            tail = "".join(traceback.format_exception(e)[-3:]).strip()
            # a verifier that could not reach the run's gateway, or whose call an env did not
            # answer, says nothing of itself (faults.gateway_failure_class); else its own error
            raise StepFailed(
                self.id,
                f"verify() raised {type(e).__name__}: {e}\n{tail}",
                failure_class=gateway_failure_class(e) or "verifier_error",
            ) from None
        results = _check_rows(self.id, rows)
        passed = sum(1 for r in results if r["result"] is True)
        self.record(ctx, results, f"{passed}/{len(results)} checks passed on env {name!r}")


async def _in_daemon_thread(fn: Any, arg: Any) -> Any:
    """`fn(arg)` in a daemon thread: a verifier that hangs is abandoned on timeout or Ctrl-C
    and cannot keep the runner alive at exit (anyio's worker threads would)."""
    done = anyio.Event()
    box: dict[str, Any] = {}
    token = anyio.lowlevel.current_token()

    def target() -> None:
        try:
            box["value"] = fn(arg)
        except BaseException as e:  # noqa: BLE001 - handed to the awaiting step
            box["error"] = e
        finally:
            try:
                anyio.from_thread.run_sync(done.set, token=token)
            except Exception:  # noqa: BLE001 - the run is over; nobody waits any more
                pass

    threading.Thread(target=target, name="agentenv-verify", daemon=True).start()
    await done.wait()
    if "error" in box:
        raise box["error"]
    return box.get("value")


_bytecode_lock = threading.Lock()
_bytecode_holds = 0
_bytecode_before = False


@contextlib.contextmanager
def _no_bytecode() -> Iterator[None]:
    """`sys.dont_write_bytecode` while a verifier and the modules beside it are imported, so a
    run writes no `__pycache__` into the bundle's folders. Counted: overlapping loads (trials
    in threads) restore the process's own setting once, when the last one ends."""
    global _bytecode_holds, _bytecode_before
    with _bytecode_lock:
        if _bytecode_holds == 0:
            _bytecode_before = sys.dont_write_bytecode
        _bytecode_holds += 1
        sys.dont_write_bytecode = True
    try:
        yield
    finally:
        with _bytecode_lock:
            _bytecode_holds -= 1
            if _bytecode_holds == 0:
                sys.dont_write_bytecode = _bytecode_before


def _load_verify(step_id: str, path: Any) -> Any:
    module_name = f"agentenv_verifier_{uuid.uuid4().hex[:12]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise StepFailed(step_id, f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        with _no_bytecode():
            spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001
        raise StepFailed(
            step_id, f"importing {path.name} failed: {type(e).__name__}: {e}"
        ) from None
    finally:
        try:
            sys.path.remove(str(path.parent))
        except ValueError:
            pass
    verify = getattr(module, "verify", None)
    if not callable(verify):
        raise StepFailed(step_id, f"{path.name} defines no function verify(mcp_url)")
    return verify


def _check_rows(step_id: str, rows: Any) -> list[dict[str, Any]]:
    if not isinstance(rows, list):
        raise StepFailed(
            step_id,
            "verify() must return a list of {id, result, description}, "
            f"got {type(rows).__name__}",
        )
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise StepFailed(
                step_id, f"verify() row {i}: expected an object, got {type(row).__name__}"
            )
        if not isinstance(row.get("result"), bool):
            raise StepFailed(
                step_id,
                f"verify() row {i} ({row.get('id', '?')}): 'result' must be "
                f"true or false, got {row.get('result')!r}",
            )
        if "id" not in row:
            raise StepFailed(step_id, f"verify() row {i}: missing 'id'")
        out.append({**row, "id": str(row["id"]), "description": str(row.get("description", ""))})
    return out
