"""A stored env or agent as a one-step bundle (`agent-env env deploy`, `a2a-agent deploy`): its
files and a task whose only step is `deploy_env` (or `deploy_agent`), so it comes up through the
same run service, sandbox providers and env/agent types as in any run, under its stored id and
version."""

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
#: kind -> (the bundle folder its files go in, the one step that deploys it)
DEPLOYS = {"env": "envs", "agent": "agents"}


def _step(kind: str, name: str) -> dict[str, Any]:
    if kind == "agent":  # an agent on its own: no envs, so no gateway
        return {"id": "agent", "type": "deploy_agent", "a2a_agent_id": name, "env_ids": []}
    # no gateway stands in front of an env deployed on its own: the user who asked for it
    # calls it directly, so it takes calls without the gateway's per-env secret
    return {"id": STEP, "type": "deploy_env", "env_id": name, "allow_direct_calls": True}


async def deploy_bundle(
    stores: Any,
    plugins: Any,
    home: Path,
    ref: str,
    version: int | None,
    step: dict[str, Any],
    kind: str = "env",
) -> tuple[Any, Materialized, Any]:
    """(bundle, materialized, entity) for deploying stored env (or agent: `kind`) `ref` at
    `version`; `step` adds fields to its `deploy_env` / `deploy_agent` step (ttl_seconds, cpu,
    memory_mb, sandbox_type, env_vars ...)."""
    from agent_env.bundles import fetch_files, load_bundle
    from agent_env.entities.runnable import materialized_from

    env = await get_version(stores, kind, ref, version)
    name = str(env.content.get("name") or env.entity_id.rpartition("/")[2])
    steps = [{**_step(kind, name), **step}]
    key = hashlib.sha256(
        json.dumps([env.entity_id, env.version, env.digest, steps], sort_keys=True).encode()
    ).hexdigest()[:24]
    folder = Path(home) / FOLDER / key
    if not folder.is_dir():
        staging = folder.with_name(key + ".new")
        shutil.rmtree(staging, ignore_errors=True)
        (staging / "tasks").mkdir(parents=True)
        (staging / "tasks" / f"{TASK}.json").write_text(json.dumps(steps, indent=2))
        await fetch_files(stores.objects, dict(env.files or {}), staging / DEPLOYS[kind] / name)
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
    prefix = env.entity_id.rpartition("/")[0]
    source = ResolvedSource(
        path=folder,
        provenance={"source": "store", kind: env.entity_id, "version": env.version},
        id_prefix=prefix,
        name=prefix.rpartition("/")[2] or prefix,
    )
    bundle = load_bundle(source, plugins)
    row = {
        "folder": f"{DEPLOYS[kind]}/{name}/",
        "kind": kind,
        "id": env.entity_id,
        "version": env.version,
        "digest": env.digest,
    }
    return bundle, materialized_from(bundle, [row]), env
