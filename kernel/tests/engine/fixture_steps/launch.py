"""`python launch.py ARGS...` = `agent-env ARGS...` with the engine test steps registered."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import engine_test_steps  # noqa: E402

from agent_env.cli.main import main  # noqa: E402
from agent_env.plugins import get_plugin_manager  # noqa: E402

get_plugin_manager().register(engine_test_steps, "engine-test-steps")
main(sys.argv[1:])
