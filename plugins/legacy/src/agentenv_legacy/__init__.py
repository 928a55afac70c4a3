"""Plugins written for the existing product (`agentenv-framework` 0.9): distributions that
declare entry points in its groups instead of our `agent_env` group.

`groups` (the existing product's groups and what happens to each), `discover` (one plugin row
per such distribution), `task_steps` (the adapter that runs its `TaskStep` classes as our step
types). Their base classes stay importable as `agent_env.task_step`: only the kernel
distribution can provide a module under the `agent_env` import name.
"""
