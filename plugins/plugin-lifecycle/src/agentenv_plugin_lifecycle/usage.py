"""Who uses what a plugin provides: settings in the config in effect and stored entities (tasks,
envs, agents, evals), so `plugin remove` can refuse to pull the rug from under them."""

from __future__ import annotations

from typing import Any

ENTITY_KINDS = ("task", "env", "agent", "eval", "skill", "artifact")
#: Keys in stored content whose string value names a registered thing.
NAME_KEYS = ("type", "sandbox_type", "sandbox", "provider", "runner", "agent")


def provided_names(registered: dict[str, list[str]]) -> dict[str, str]:
    """Name -> "step type 'x'" for everything a plugin registered (store keys lose their kind)."""
    out: dict[str, str] = {}
    for kind, names in registered.items():
        if kind == "commands":
            continue
        label = kind.rstrip("s").replace("_", " ")
        for name in names:
            bare = name.split(":", 1)[1] if kind == "stores" and ":" in name else name
            store_kind = name.split(":", 1)[0] if kind == "stores" and ":" in name else ""
            out[bare] = f"{store_kind + ' ' if store_kind else ''}{label} {bare!r}"
    return out


def config_users(
    config: Any, provided: dict[str, str], dists: set[str], sections: set[str]
) -> list[str]:
    """Settings (not defaults) that name a provided thing or belong to the plugin's sections."""
    users = []
    for row in config.rows():
        if str(row["origin"]).startswith("default"):  # also "default (docker plugin)"
            continue
        section, key, value = row["section"], row["key"], row["value"]
        where = f"{row['origin']}: [{section}] {key}"
        if isinstance(value, str) and value in provided:
            users.append(f"{where} = {value!r} uses {provided[value]}")
        elif section in sections or any(section == f"plugins.{d}" for d in dists):
            users.append(f"{where} is a setting of this plugin")
    return users


def _walk(value: Any) -> list[tuple[str, str]]:
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in NAME_KEYS and isinstance(item, str):
                found.append((key, item))
            found += _walk(item)
    elif isinstance(value, list):
        for item in value:
            found += _walk(item)
    return found


async def entity_users(entities: Any, provided: dict[str, str], limit: int = 20) -> list[str]:
    """Latest stored entity versions (of `Stores.entities`) whose content names a provided thing."""
    users: list[str] = []
    for kind in ENTITY_KINDS:
        for entity_id in await entities.ids(kind):
            entity = await entities.latest(kind, entity_id)
            if entity is None:
                continue
            names = sorted({v for _, v in _walk(entity.content) if v in provided})
            for name in names:
                users.append(
                    f"stored {kind} {entity_id!r} (v{entity.version}) uses {provided[name]}"
                )
                if len(users) >= limit:
                    return users + ["... (more not shown)"]
    return users


def find_users(provided: dict[str, str], dists: set[str], sections: set[str]) -> list[str]:
    """Everything in the config in effect and the configured stores that uses the plugin."""
    import anyio

    from agent_env.config import load_config
    from agent_env.errors import AgentEnvError
    from agent_env.plugins import get_plugin_manager

    plugins = get_plugin_manager()
    try:
        config = load_config(plugins=plugins)
    except AgentEnvError as exc:
        return [f"the config cannot be read, so its use of the plugin is unknown: {exc}"]
    users = config_users(config, provided, dists, sections)

    async def stored() -> list[str]:
        from agent_env.stores import open_stores_async

        async with await open_stores_async(config, plugins) as stores:
            return await entity_users(stores.entities, provided)

    if provided:
        try:
            users += anyio.run(stored)
        except AgentEnvError as exc:
            users.append(f"the stores cannot be read, so stored entities are unchecked: {exc}")
    return users
