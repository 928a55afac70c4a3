"""CLI coding agents as agent-env agent kinds: `harnesses` says how each CLI is installed,
configured, run headless and how its session log reads; `install` keeps npm installs in a
cache keyed by digest; `kind` is the `AgentKind` that ties them to a sandbox and the gateway."""
