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
#: kind -> the bundle folder its files go in
DEPLOYS = {"env": "envs", "agent": "agents"}


def _named(plugins: Any, kind: str, step: dict[str, Any], name: str) -> dict[str, Any]:
    """`step` with the stored entity's `name` in the field its step type declares as its
    reference to a `kind` (`bundle_refs`), e.g. `deploy_env`'s `env_id`."""
    from agent_env.errors import BundleError

    step_type = plugins.step_types.get(step.get("type", ""))
    refs = getattr(step_type, "bundle_refs", None) or {}
    field = next((f for f in refs.get(kind, ()) if not f.endswith("[]")), None)
    if field is None:
        raise BundleError(f"step type {step.get('type')!r} declares no reference to an {kind}")
    return {**step, field: name}


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
    `version` by the one step `step` the front end gives (its id, type and fields); the
    entity's name goes in the field the step type declares as its reference to a `kind`."""
    from agent_env.bundles import fetch_files, load_bundle
    from agent_env.entities.runnable import materialized_from

    env = await get_version(stores, kind, ref, version)
    name = str(env.content.get("name") or env.entity_id.rpartition("/")[2])
    steps = [_named(plugins, kind, step, name)]
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
