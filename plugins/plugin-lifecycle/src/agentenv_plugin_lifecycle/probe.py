"""What is installed in an environment, as JSON, from a fresh interpreter.

`lifecycle` runs this file's source with `python -c`, so it uses only the standard library at
the top and still answers after an install replaced or broke agent-env itself.
"""

import json
import os
import re
import sys


def _norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _plugin_entry_points(by_group):
    """`agentenv_legacy.groups.plugin_entry_points`, or only our group's names when
    agentenv-legacy is not installed or no longer imports."""
    try:
        from agentenv_legacy.groups import plugin_entry_points
    except Exception:  # noqa: BLE001 - a broken agent-env is reported by the caller
        return sorted(by_group.get("agent_env", ()))
    return list(plugin_entry_points(by_group))


def snapshot():
    from importlib.metadata import distributions

    dists, entry_points, requires, requested = {}, {}, {}, []
    for dist in distributions():
        name = dist.metadata["Name"]
        if not name:
            continue
        key = _norm(name)
        if key in dists:
            continue
        dists[key] = dist.version
        by_group: dict[str, list[str]] = {}
        for ep in dist.entry_points:
            by_group.setdefault(ep.group, []).append(ep.name)
        entry_points[key] = _plugin_entry_points(by_group)
        requires[key] = list(dist.requires or [])
        installer = (dist.read_text("INSTALLER") or "").strip()
        if installer == "pip" and dist.read_text("REQUESTED") is not None:
            requested.append(key)  # uv marks dependencies REQUESTED too, so only pip's counts
    out = {
        "dists": dists,
        "entry_points": entry_points,
        "requires": requires,
        "requested": sorted(requested),
    }
    for var in ("AGENT_ENV_STRICT_PLUGINS", "AGENT_ENV_DISABLE_PLUGINS"):
        os.environ.pop(var, None)
    try:
        import logging

        logging.getLogger("agent_env").disabled = True
        from agent_env.plugins import PluginManager

        infos, problems = PluginManager().describe()
        out["plugins"] = [info.to_dict() for info in infos]
        out["registry_problems"] = problems
    except BaseException as exc:  # agent-env itself no longer imports: the caller rolls back
        out["kernel_error"] = f"{type(exc).__name__}: {exc}"
    return out


if __name__ == "__main__":
    json.dump(snapshot(), sys.stdout)
