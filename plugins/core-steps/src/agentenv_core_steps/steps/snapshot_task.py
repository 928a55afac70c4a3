"""`snapshot_task`: snapshot the running task instance (every deployed env's state, the
gateway's call log and its env clock) as a version of a `task_snapshot` entity; in a child of
a fork (`agent-env run --from-snapshot ID`) the same step restores that snapshot instead.

The id is `snapshot_id`, default `<task id>:<step id>`; a state that did not change keeps its
version. What the step did is kept under `outputs.<step id>` (the run record shows it):
`{snapshot, digest}` when it took one, plus `forked_from` and `restored_digest` in a child.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from agent_env.context import StepContext
from agent_env.errors import StepFailed
from agent_env.models import Step


@attrs.frozen(kw_only=True)
class SnapshotTask(Step):
    """Take a snapshot of the whole task instance (or, in a fork's child, restore it)."""

    type: ClassVar[str] = "snapshot_task"

    snapshot_id: str | None = None

    def check(self, bundle: object) -> list[str]:
        if self.snapshot_id is not None and (
            not self.snapshot_id.strip() or "\x00" in self.snapshot_id
        ):
            return ["snapshot_id: must be a non-empty name"]
        return []

    async def execute(self, ctx: StepContext) -> None:
        from agent_env.engine import snapshot as stored
        from agentenv_core_steps.snapshots import capture, restore

        parent = ctx.instance_resource_if_started(stored.RESTORE_FROM)
        if parent is not None and parent.at_step == self.id:
            restored = await restore(ctx, parent)
            if restored != parent.digest:
                raise StepFailed(
                    self.id,
                    f"restored snapshot {parent.ref}, but the state reads back as {restored}, "
                    f"not {parent.digest} (an env's restore did not put its state back)",
                    failure_class="env",
                )
            ctx.set(
                "outputs",
                self.id,
                value={
                    "forked_from": parent.ref,
                    "digest": parent.digest,
                    "restored_digest": restored,
                },
            )
            ctx.log(f"restored snapshot {parent.ref} ({restored})")
            return
        name = self.snapshot_id or f"{ctx.task_id}:{self.id}"
        taken = await stored.save(ctx.stores, await capture(ctx, name))
        ctx.set("outputs", self.id, value={"snapshot": taken.ref, "digest": taken.digest})
        ctx.log(
            f"snapshot {taken.ref}: {len(taken.envs)} env(s), {taken.call_position} call(s), "
            f"{taken.digest}"
        )
