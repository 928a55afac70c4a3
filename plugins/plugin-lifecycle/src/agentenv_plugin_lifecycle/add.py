"""`agent-env plugin add`: plan, install with the owning installer, verify like `plugin check`,
and roll back to the exact previous set of distributions when the result is not right."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import attrs

from agent_env.errors import PluginError
from agentenv_plugin_lifecycle import installers
from agentenv_plugin_lifecycle.environment import PIPX, SYSTEM, VENV, Environment, Refused, detect
from agentenv_plugin_lifecycle.snapshot import Snapshot, changes
from agentenv_plugin_lifecycle.specs import (
    OWN_DISTRIBUTIONS,
    Spec,
    normalize,
    own_distributions,
    parse_spec,
)
from agentenv_plugin_lifecycle.transaction import installer_problems, transaction


@attrs.frozen(kw_only=True)
class AddPlan:
    """What `plugin add` will do; `lines()` is what `--dry-run` prints."""

    env: Environment
    specs: tuple[Spec, ...]
    command: tuple[str, ...]
    find_links: tuple[str, ...] = ()
    no_index: bool = False

    def lines(self, preview: list[str] | None = None) -> list[str]:
        out = [
            f"environment: {self.env.describe()} (installer: {self.env.installer})",
            f"python: {self.env.python}",
        ]
        out += [
            f"add: {s.name}"
            + (f" from {s.install}" if s.install != s.text or "/" in s.text else "")
            for s in self.specs
        ]
        out.append(f"run: {installers.shell(list(self.command))}")
        if preview is not None:
            out += [f"would {line}" for line in preview] or ["would change no distribution"]
        out.append(
            "then: check every plugin loads; on any problem restore the previous "
            "distributions exactly"
        )
        return out


def plan_add(
    texts: list[str],
    *,
    env: Environment | None = None,
    find_links: tuple[str, ...] = (),
    no_index: bool = False,
) -> AddPlan:
    """Refuse what must not be installed, else the plan (nothing is changed yet)."""
    env = env or detect()
    specs = tuple(parse_spec(t) for t in texts)
    own = own_distributions(list(specs))
    if own:
        raise Refused(
            f"{', '.join(own)} is agent-env itself, not a plugin: `plugin add` never installs or "
            f"replaces it. To upgrade agent-env, run: {installers.user_upgrade_hint(env, own[0])}"
        )
    for spec in specs:
        if spec.entry_points == ():
            raise Refused(_not_a_plugin(env, spec))
    command = installers.add_command(env, [s.install for s in specs], find_links, no_index)
    return AddPlan(
        env=env, specs=specs, command=tuple(command), find_links=find_links, no_index=no_index
    )


def _not_a_plugin(env: Environment, spec: Spec) -> str:
    return (
        f"{spec.name} registers nothing under the `agent_env` entry-point group, so it is not an "
        "agent-env plugin (a library a plugin needs comes with the plugin). To install it "
        f"anyway, run: {installers.user_install_hint(env, [spec.install])}"
    )


def preview(plan: AddPlan, before: Snapshot) -> list[str] | None:
    """What a dry-run resolution says would change (pip and `uv pip` environments only), refusing
    a plan that would replace agent-env's own distributions; None when no dry run exists."""
    env = plan.env
    if env.kind not in (VENV, SYSTEM, PIPX):
        return None
    index = installers.index_args(plan.find_links, plan.no_index)
    installs = [s.install for s in plan.specs]
    cmd = installers.low_install(env, installs, index)
    if env.low_level[0] == "uv":
        cmd.insert(3, "--dry-run")
    else:
        cmd[4:4] = ["--dry-run", "--quiet", "--report", "-"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise PluginError(
            f"resolving {' '.join(s.text for s in plan.specs)} failed:\n"
            f"{(done.stderr or done.stdout).strip()[-2000:]}"
        )
    would: dict[str, str] = {}
    if env.low_level[0] == "uv":
        for line in done.stderr.splitlines():
            if line.startswith(" + ") and "==" in line:
                name, _, version = line[3:].split(" ")[0].partition("==")
                would[normalize(name)] = version
    else:
        for item in json.loads(done.stdout or "{}").get("install", []):
            meta = item.get("metadata", {})
            would[normalize(meta.get("name", ""))] = meta.get("version", "")
    lines = []
    for name, version in sorted(would.items()):
        old = before.dists.get(name)
        if old == version:
            continue
        if name in OWN_DISTRIBUTIONS and old is not None:
            raise Refused(
                f"installing {' '.join(s.text for s in plan.specs)} would replace {name} {old} "
                f"with {version}; `plugin add` never changes agent-env itself. Install a release "
                f"of the plugin built for {name} {old}, or upgrade agent-env first: "
                f"{installers.user_upgrade_hint(env, name)}"
            )
        lines.append(
            f"install {name}=={version}" if old is None else f"change {name} {old} -> {version}"
        )
    return lines


def verify(
    before: Snapshot, after: Snapshot, specs: tuple[Spec, ...], env: Environment
) -> list[str]:
    """Everything wrong with `after` that the install caused (what `plugin check` would say)."""
    if after.kernel_error:
        return [f"agent-env itself no longer imports: {after.kernel_error}"]
    problems = []
    for name in sorted(OWN_DISTRIBUTIONS & before.dists.keys()):
        if after.dists.get(name) != before.dists[name]:
            problems.append(
                f"{name} {before.dists[name]} was replaced by "
                f"{after.dists.get(name, 'nothing')}; plugins may not change agent-env"
            )
    for name, eps in before.entry_points.items():
        if eps and name not in after.dists:
            problems.append(f"the plugin distribution {name} was removed")
    for spec in specs:
        if spec.name not in after.dists:
            problems.append(f"{spec.name} is not installed after the install")
        elif not after.entry_points.get(spec.name):
            problems.append(_not_a_plugin(env, spec))
    changed = {n for n, v in after.dists.items() if before.dists.get(n) != v}
    was = before.plugin_status()
    for name, (dist, status, errors) in after.plugin_status().items():
        if status in ("ok", "disabled"):
            continue
        if normalize(dist or "") in changed or name not in was:
            problems.append(f"plugin {name!r} ({dist}) is {status}: {'; '.join(errors)}")
        elif was[name][1] == "ok":
            problems.append(
                f"plugin {name!r} ({dist}) worked before and is now {status}: {'; '.join(errors)}"
            )
    for registry, problem in after.registry_problems.items():
        if before.registry_problems.get(registry) != problem:
            problems.append(f"registry {registry}: {problem}")
    return problems


@attrs.frozen(kw_only=True)
class AddResult:
    changes: dict[str, list[str]]
    plugins: list[str]


def execute_add(
    plan: AddPlan,
    *,
    confirm: Callable[[list[str]], bool],
    echo: Callable[[str], None],
    lock_timeout: float = 600.0,
) -> AddResult | None:
    """Under the environment lock: snapshot, preview, ask `confirm(plan lines)`, install, verify,
    roll back on any problem. Returns None when `confirm` says no."""
    with transaction(plan, echo=echo, lock_timeout=lock_timeout) as tx:
        before = tx.before
        lines = plan.lines(preview(plan, before))
        if not confirm(lines):
            return None
        done, after = tx.run(plan.command)
        problems = installer_problems(done) or verify(before, after, plan.specs, plan.env)
        if problems:
            if tx.changed(after):
                echo("rolling back: " + "; ".join(p.splitlines()[0] for p in problems))
                tx.rollback()
                problems.append(
                    "rolled back: the environment has exactly the distributions it had before"
                )
            raise PluginError("plugin add failed: " + "\n  ".join(problems))
        changed = {n for n, v in after.dists.items() if before.dists.get(n) != v}
        names = [p["name"] for p in after.plugins if normalize(p.get("dist") or "") in changed]
        return AddResult(changes=changes(before.dists, after.dists), plugins=sorted(set(names)))
