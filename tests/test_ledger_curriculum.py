"""A curriculum split: an OpenEnv split with the `band:LOW-HIGH` sampler draws, on a reset that
gives no index, only the tasks whose ledger pass rate lies in the band (the plugin's sampler
through the kernel's `agentenv_sample_task`); with an index, the split is as before; a sampler
for an unknown split, or one no plugin knows, is refused when the app is built."""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import anyio
import pytest

from agentenv_grading import ledger

sys.path.insert(0, str(Path(__file__).parent))
from agents_support import groceries_steps, notes_bundle  # noqa: E402

#: task -> (passes, trials) in the ledger
RATES = {"always": (10, 10), "sometimes": (5, 10), "never": (0, 10)}


@pytest.fixture(scope="module")
def curriculum(tmp_path_factory):
    """(bundle folder, home) with three copies of the groceries task and a ledger where only
    `sometimes` is in the band 0.2-0.8."""
    base = tmp_path_factory.mktemp("curriculum")
    root = notes_bundle(base, {name: groceries_steps() for name in RATES})
    home = base / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AGENT_ENV_HOME", str(home))
        mp.delenv("AGENT_ENV_CONFIG", raising=False)
        from agent_env.bundles import load_bundle
        from agent_env.plugins import get_plugin_manager

        bundle = load_bundle(str(root), get_plugin_manager())
        records = [
            {
                "id": f"ti-{name}-{i}",
                "run_id": "run-x",
                "task": {"name": name, "id": bundle.tasks[name].id, "version": 1},
                "agent": "tool-loop",
                "status": "passed" if i < passes else "scored_below",
                "scores": {},
            }
            for name, (passes, n) in RATES.items()
            for i in range(n)
        ]
        ledger.add_trials(records)
        yield root, home


def test_a_band_split_draws_only_the_tasks_the_ledger_puts_in_the_band(curriculum):
    from agent_env.plugins import get_plugin_manager
    from agentenv_openenv.served import load

    root, _ = curriculum
    served = load(str(root), get_plugin_manager(), samplers={"*": "band:0.2-0.8"})
    drawn = collections.Counter(served.pick("all", None).task.name for _ in range(40))
    assert drawn == {"sometimes": 40}
    assert served.pick("all", 0).task.name == "always"  # an index still picks by position
    wide = load(str(root), get_plugin_manager(), samplers={"all": "band:0.0-1.0"})
    assert {wide.pick("all", None).task.name for _ in range(100)} == set(RATES)


def test_bad_samplers_are_refused_when_the_app_is_built(curriculum):
    from agent_env.plugins import get_plugin_manager
    from agentenv_openenv.served import load

    root, _ = curriculum
    with pytest.raises(ValueError, match=r"sampler for split 'al': there is no such split"):
        load(str(root), get_plugin_manager(), samplers={"al": "band:0.2-0.8"})
    with pytest.raises(ValueError, match=r"no installed plugin knows the sampler 'hardest'"):
        load(str(root), get_plugin_manager(), samplers={"all": "hardest"})
    with pytest.raises(ValueError, match=r"write band:LOW-HIGH"):
        load(str(root), get_plugin_manager(), samplers={"all": "band:0.9"})


@pytest.mark.slow  # an OpenEnv server and an episode
@pytest.mark.timeout(300)
def test_an_openenv_reset_without_an_index_follows_the_ledger(curriculum):
    from openenv.core.generic_client import GenericEnvClient

    from agent_env.openenv import build_app
    from agentenv_protocol.serving import serve_in_thread

    root, _ = curriculum
    app = build_app(str(root), samplers={"all": "band:0.2-0.8"})
    server = serve_in_thread(app, startup_timeout=60)

    async def reset_twice() -> list[str]:
        names = []
        async with GenericEnvClient(base_url=server.url) as env:
            for _ in range(2):
                r = await env.reset(split="all")
                assert r.done is False, r.metadata
                names.append(r.metadata["task"]["name"])
        return names

    try:
        assert anyio.run(reset_twice) == ["sometimes", "sometimes"]
    finally:
        server.stop(timeout=60)
