"""`agent-env plugin remove`: find the distributions, refuse while something uses them (unless
forced), remove them with the dependencies only they needed, and check the rest still loads."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from agent_env.errors import PluginError
from agent_env.suggest import did_you_mean
from agentenv_plugin_lifecycle import installers
from agentenv_plugin_lifecycle.add import verify
from agentenv_plugin_lifecycle.environment import Environment, Refused, detect
from agentenv_plugin_lifecycle.snapshot import Snapshot, changes, take
from agentenv_plugin_lifecycle.specs import OWN_DISTRIBUTIONS, normalize
from agentenv_plugin_lifecycle.transaction import installer_problems, transaction
from agentenv_plugin_lifecycle.usage import find_users, provided_names

#: This plugin's own distribution: `plugin remove` does not remove the command it runs.
SELF = "agentenv-plugin-lifecycle"


@attrs.frozen(kw_only=True)
class RemovePlan:
    env: Environment
    dists: tuple[str, ...]
    plugins: tuple[str, ...]
    provides: dict[str, list[str]]
    orphans: tuple[str, ...]
    command: tuple[str, ...]
    users: tuple[str, ...]

    def lines(self) -> list[str]:
        out = [f"environment: {self.env.describe()} (installer: {self.env.installer})"]
        out += [f"remove: {d}" for d in self.dists]
        out += [f"remove (only it needed this): {o}" for o in self.orphans]
        for kind, names in sorted(self.provides.items()):
            out.append(f"provides {kind}: {', '.join(names)}")
        out.append(f"run: {installers.shell(list(self.command))}")
        return out


def _requirements(snapshot: Snapshot, dist: str, all_extras: bool) -> set[str]:
    from packaging.requirements import InvalidRequirement, Requirement

    out = set()
    for text in snapshot.requires.get(dist, []):
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is not None and not all_extras and not req.marker.evaluate({"extra": ""}):
            continue
        out.add(normalize(req.name))
    return out


def _closure(snapshot: Snapshot, roots: set[str], all_extras: bool) -> set[str]:
    seen: set[str] = set()
    todo = [r for r in roots if r in snapshot.dists]
    while todo:
        dist = todo.pop()
        if dist in seen:
            continue
        seen.add(dist)
        todo += [r for r in _requirements(snapshot, dist, all_extras) if r in snapshot.dists]
    return seen


def orphans(snapshot: Snapshot, removing: set[str]) -> list[str]:
    """Dependencies of `removing` that nothing staying needs. What stays: every other
    distribution, agent-env's own, and those installed on request (pip's `REQUESTED` marker);
    every extra of what stays counts, so a doubtful dependency is kept."""
    mine = _closure(snapshot, removing, all_extras=False) - removing
    keep = (set(snapshot.dists) - removing - mine) | (mine & OWN_DISTRIBUTIONS)
    keep |= mine & set(snapshot.requested)
    rest = _closure(snapshot, keep, all_extras=True)
    return sorted(mine - rest)


def requirers(snapshot: Snapshot, removing: set[str]) -> list[str]:
    """Staying distributions that require one of `removing` (not through an extra): removing
    it would leave the environment inconsistent (`pip check` failing), so it counts as a use."""
    out = []
    for dist in sorted(set(snapshot.dists) - removing):
        for needed in sorted(_requirements(snapshot, dist, all_extras=False) & removing):
            out.append(
                f"{dist} {snapshot.dists[dist]} requires {needed} (`pip check` would fail); "
                "for fewer plugins install agentenv-kernel with only the plugins you want"
            )
    return out


def _resolve(snapshot: Snapshot, name: str) -> str:
    """The distribution NAME means: a plugin name or a distribution name."""
    by_plugin = {p["name"]: normalize(p["dist"]) for p in snapshot.plugins if p.get("dist")}
    if name in by_plugin:
        return by_plugin[name]
    dist = normalize(name)
    if dist in snapshot.dists:
        return dist
    plugin_dists = sorted({d for d, eps in snapshot.entry_points.items() if eps})
    known = sorted(set(by_plugin) | set(plugin_dists))
    raise PluginError(
        f"no installed plugin or distribution named {name!r}"
        f"{did_you_mean(name, known)}; installed plugins: {', '.join(plugin_dists) or 'none'}"
    )


def plan_remove(
    names: list[str], *, env: Environment | None = None, snapshot: Snapshot | None = None
) -> RemovePlan:
    """Resolve NAMEs, refuse agent-env itself and non-plugins, and find who uses them."""
    env = env or detect()
    snapshot = snapshot or take(env.python)
    dists = sorted({_resolve(snapshot, n) for n in names})
    for dist in dists:
        if dist in OWN_DISTRIBUTIONS:
            raise Refused(
                f"{dist} is agent-env itself, not a plugin; `plugin remove` never "
                "removes it (uninstall agent-env with the tool that installed it)"
            )
        if dist == SELF:
            raise Refused(
                f"{dist} provides `agent-env plugin add/remove` itself: removing it with "
                "`plugin remove` would leave no command to undo it; remove it with: "
                + installers.shell(installers.low_uninstall(env, [dist]))
            )
        if not snapshot.entry_points.get(dist):
            raise Refused(
                f"{dist} registers nothing under the `agent_env` entry-point group, so "
                "it is not an agent-env plugin; remove it with: "
                + installers.shell(installers.low_uninstall(env, [dist]))
            )
    mine = [p for p in snapshot.plugins if normalize(p.get("dist") or "") in dists]
    provides: dict[str, list[str]] = {}
    sections: set[str] = set()
    for plugin in mine:
        for kind, registered in plugin.get("registered", {}).items():
            provides.setdefault(kind, []).extend(registered)
        sections |= set(plugin.get("config_sections", {}))
    users = requirers(snapshot, set(dists)) + find_users(
        provided_names(provides), set(dists), sections
    )
    gone = orphans(snapshot, set(dists))
    command = installers.remove_command(env, dists, gone)
    return RemovePlan(
        env=env,
        dists=tuple(dists),
        plugins=tuple(p["name"] for p in mine),
        provides={k: sorted(v) for k, v in provides.items()},
        orphans=tuple(gone),
        command=tuple(command),
        users=tuple(users),
    )


def execute_remove(
    plan: RemovePlan,
    *,
    force: bool,
    confirm: Callable[[list[str]], bool],
    echo: Callable[[str], None],
    lock_timeout: float = 600.0,
) -> dict[str, list[str]] | None:
    """Under the environment lock: refuse while used (unless `force`), remove, check the other
    plugins still load (else restore). Returns the changes, or None when not confirmed."""
    if plan.users and not force:
        raise Refused(
            f"{', '.join(plan.dists)} is in use:\n  "
            + "\n  ".join(plan.users)
            + "\nchange those first, or run `agent-env plugin remove --force "
            + " ".join(plan.dists)
            + "`"
        )
    with transaction(plan, echo=echo, lock_timeout=lock_timeout) as tx:
        before = tx.before
        if not confirm(plan.lines()):
            return None
        done, after = tx.run(plan.command)
        problems = installer_problems(done)
        still = [d for d in plan.dists if d in after.dists]
        if not problems and still:
            problems.append(f"still installed after removal: {', '.join(still)}")
        if not problems:
            kept = Snapshot(
                dists={d: v for d, v in before.dists.items() if d in after.dists},
                entry_points=before.entry_points,
                requires=before.requires,
                plugins=[p for p in before.plugins if p["name"] not in plan.plugins],
                registry_problems=before.registry_problems,
            )
            problems = [p for p in verify(kept, after, (), plan.env) if "was removed" not in p]
        if problems:
            tx.rollback()
            raise PluginError("plugin remove failed and was rolled back: " + "\n  ".join(problems))
        return changes(before.dists, after.dists)
