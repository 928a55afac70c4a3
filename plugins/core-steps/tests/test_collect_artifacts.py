"""collect_artifacts from a local sandbox: the three ways of naming paths, skips, and new
versions of the universe entity with lineage to the run."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio

BOX = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"}
WRITE = """
import os
def run(input):
    app = os.environ["APP_DIR"]  # the sandbox's /app
    os.makedirs(f"{app}/artifact/sub", exist_ok=True)
    os.makedirs(f"{app}/elsewhere", exist_ok=True)
    open(f"{app}/artifact/out.txt", "w").write("hello")
    open(f"{app}/artifact/sub/data.json", "w").write('{"a": 1}')
    open(f"{app}/elsewhere/abs.txt", "w").write("absolute")
    open(f"{app}/artifact/skip.log", "w").write("noise")
"""
WRITE_STEP = {
    "id": "write",
    "type": "run_code",
    "sandbox_name": "box",
    "script_artifact_id": "write",
}


def collect(step_id: str = "collect", **fields) -> dict:
    return {"id": step_id, "type": "collect_artifacts", "sandbox_name": "box", **fields}


async def stored(runner, entity: dict, key: str) -> bytes:
    from agent_env.stores import open_stores

    stores = open_stores({}, runner.plugins(), home=runner.home)
    try:
        version = await stores.entities.get(
            "file_artifact_universe", entity["id"], entity["version"]
        )
        return version, await stores.objects.get(version.content["files"][key]["object_key"])
    finally:
        await stores.close()


async def test_named_paths_are_collected_with_lineage_and_missing_ones_skipped(runner):
    paths = ["out.txt", "/app/elsewhere/abs.txt", "missing.txt", "https://x/y"]
    record = await runner.run(
        [BOX, WRITE_STEP, collect(artifact_paths=paths)], {"artifacts/write/write.py": WRITE}
    )
    assert record["failure"] is None, record["failure"]
    collected = runner.state["collected_artifacts"]["collect"]
    assert sorted(collected["artifacts"]) == ["app/elsewhere/abs.txt", "out.txt"]
    assert all(
        u.startswith("object://collected_artifacts/") for u in collected["artifacts"].values()
    )
    universe = collected["file_artifact_universe"]
    assert universe == {"id": runner.instance.id, "version": 1}
    assert runner.state["file_artifact_universe"] == universe
    version, data = await stored(runner, universe, "out.txt")
    assert data == b"hello"
    assert version.content["run_id"] == "run-test"
    assert version.content["task_instance_id"] == runner.instance.id
    assert version.content["step_id"] == "collect"
    _, absolute = await stored(runner, universe, "app/elsewhere/abs.txt")
    assert absolute == b"absolute"
    assert any("missing.txt: not found" in line for line in runner.logs.lines)


async def test_base_path_is_enumerated_and_a_second_collection_is_a_new_version(runner):
    steps = [
        BOX,
        WRITE_STEP,
        collect("first", exclude_basenames=["skip.log"]),
        {"id": "more", "type": "run_code", "sandbox_name": "box", "script_artifact_id": "more"},
        collect("second", exclude_basenames=["skip.log"]),
    ]
    more = (
        "import os\ndef run(input):\n"
        "    open(os.environ['APP_DIR'] + '/artifact/out.txt', 'w').write('changed')\n"
    )
    record = await runner.run(
        steps, {"artifacts/write/write.py": WRITE, "artifacts/more/more.py": more}
    )
    assert record["failure"] is None, record["failure"]
    first = runner.state["collected_artifacts"]["first"]
    second = runner.state["collected_artifacts"]["second"]
    assert sorted(first["artifacts"]) == ["out.txt", "sub/data.json"]
    assert first["file_artifact_universe"]["version"] == 1
    assert second["file_artifact_universe"]["version"] == 2
    _, data = await stored(runner, second["file_artifact_universe"], "out.txt")
    assert data == b"changed"


async def test_a_prompt_steps_manifest_names_the_files_by_logical_name(runner):
    manifest = '{"artifacts": {"report": "/app/artifact/out.txt", "glob": "/app/*.txt"}}'
    steps = [
        BOX,
        WRITE_STEP,
        {
            "id": "agent",
            "type": "deploy_agent",
            "a2a_agent_id": "solver",
            "sandbox_name": "box",
            "metadata": {"solution": [{"response": manifest}]},
        },
        {"id": "ask", "type": "prompt_agent", "prompt": "list your files", "timeout_seconds": 30},
        collect(manifest_step_id="ask", artifact_paths=["sub/data.json"]),
    ]
    files = {"artifacts/write/write.py": WRITE, "agents/solver/agent.toml": 'type = "scripted"\n'}
    record = await runner.run(steps, files)
    assert record["failure"] is None, record["failure"]
    collected = runner.state["collected_artifacts"]["collect"]
    assert list(collected["artifacts"]) == ["report"]  # the manifest wins; globs are skipped
    _, data = await stored(runner, collected["file_artifact_universe"], "report")
    assert data == b"hello"


async def test_nothing_found_fails_the_step(runner):
    record = await runner.run([BOX, collect(artifact_paths=["nope.txt"])], {})
    assert "none of the 1 artifact path(s) exists" in record["failure"]["message"]


async def test_mixing_modes_is_refused_before_the_run(runner):
    from agent_env.errors import BundleError

    with pytest.raises(BundleError, match="container_name needs sandbox_name"):
        await runner.run([BOX, {"id": "c", "type": "collect_artifacts", "container_name": "x"}], {})
