"""A stored env as a one-step bundle (`agent-env env deploy`): its files and a task whose only
step is `deploy_env`, so the env comes up through the same run service, sandbox providers and
env types as in any run, under its stored id and version."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from agent_env.bundles.model import Materialized, ResolvedSource
from agent_env.entities.catalog import get_version

FOLDER = "deploy-bundles"
TASK = "deploy"
STEP = "env"


async def deploy_bundle(
    stores: Any,
    plugins: Any,
    home: Path,
    ref: str,
    version: int | None,
    step: dict[str, Any],
) -> tuple[Any, Materialized, Any]:
    """(bundle, materialized, env entity) for deploying stored env `ref` at `version`; `step`
    adds fields to the `deploy_env` step (ttl_seconds, cpu, memory_mb, sandbox_type ...)."""
    from agent_env.bundles import fetch_files, load_bundle
    from agent_env.entities.runnable import materialized_from

    env = await get_version(stores, "env", ref, version)
    name = str(env.content.get("name") or env.entity_id.rpartition("/")[2])
    # no gateway stands in front of an env deployed on its own: the user who asked for it
    # calls it directly, so it takes calls without the gateway's per-env secret
    steps = [{"id": STEP, "type": "deploy_env", "env_id": name, "allow_direct_calls": True, **step}]
    key = hashlib.sha256(
        json.dumps([env.entity_id, env.version, env.digest, steps], sort_keys=True).encode()
    ).hexdigest()[:24]
    folder = Path(home) / FOLDER / key
    if not folder.is_dir():
        staging = folder.with_name(key + ".new")
        shutil.rmtree(staging, ignore_errors=True)
        (staging / "tasks").mkdir(parents=True)
        (staging / "tasks" / f"{TASK}.json").write_text(json.dumps(steps, indent=2))
        await fetch_files(stores.objects, dict(env.files or {}), staging / "envs" / name)
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
    prefix = env.entity_id.rpartition("/")[0]
    source = ResolvedSource(
        path=folder,
        provenance={"source": "store", "env": env.entity_id, "version": env.version},
        id_prefix=prefix,
        name=prefix.rpartition("/")[2] or prefix,
    )
    bundle = load_bundle(source, plugins)
    row = {
        "folder": f"envs/{name}/",
        "kind": "env",
        "id": env.entity_id,
        "version": env.version,
        "digest": env.digest,
    }
    return bundle, materialized_from(bundle, [row]), env
