"""Installing and removing plugins safely (`agent-env plugin add|remove`).

`environment` (which installer owns the running Python; PEP 668 and read-only refusals),
`specs` (what a SPEC names; agent-env's own distributions), `installers` (the commands),
`lock` (one change per environment at a time), `snapshot`/`probe` (what is installed, seen
from a fresh interpreter), `add`, `remove`, `usage` (who uses a plugin) and `rollback`.
"""

from agent_env.plugins.lifecycle.add import AddPlan, AddResult, execute_add, plan_add
from agent_env.plugins.lifecycle.environment import Environment, Refused, detect
from agent_env.plugins.lifecycle.remove import RemovePlan, execute_remove, plan_remove

__all__ = [
    "AddPlan",
    "AddResult",
    "Environment",
    "Refused",
    "RemovePlan",
    "detect",
    "execute_add",
    "execute_remove",
    "plan_add",
    "plan_remove",
]
