"""Bundles shipped with the kernel. `hello/` (entry point `hello` in `agent_env.bundles`) is the
first run: it needs no Docker, model or config. Nothing here is imported to run a bundle."""
