"""Which tasks a bundle serves as OpenEnv episodes, in which splits, and how a finished
episode's scores become its reward. Nothing here imports openenv.

A task is served when every `prompt_agent` step prompts one agent (the played agent) that one
`deploy_agent` step deploys, and no step has `retry_config` (a turn the client played cannot be
replayed). Splits: `all` plus one per eval for a single bundle; one per key for a mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from agent_env.errors import BundleError
from agent_env.suggest import did_you_mean

#: The split that holds every task of a single bundle.
ALL = "all"
Reward = None | str | Callable[[dict[str, float]], float]


@attrs.frozen(kw_only=True)
class ServedTask:
    """One task as an OpenEnv task entry."""

    key: str  # which bundle (the split name for a mapping, `all` for one bundle)
    task: Any
    split: str
    index: int
    agent: str
    prompt: str
    system_prompt: str | None
    verifier_ids: dict[str, str]  # step id -> verifier id

    def entry(self) -> dict[str, Any]:
        return {
            "id": self.task.id,
            "name": self.task.name,
            "index": self.index,
            "prompt": self.prompt,
            "system_prompt": self.system_prompt,
            "agent": self.agent,
        }

    def ref(self) -> dict[str, Any]:
        return {
            "id": self.task.id,
            "name": self.task.name,
            "split": self.split,
            "index": self.index,
        }


@attrs.frozen(kw_only=True)
class Served:
    bundles: dict[str, Any]
    splits: dict[str, list[ServedTask]]
    env_name: str
    reward: Reward = None
    left_out: list[str] = attrs.field(factory=list)
    #: split -> sampler (`band:0.2-0.8`; `*`: every split): a reset to the split without an
    #: index draws its task through the plugins' `agentenv_sample_task` (agentenv-grading:
    #: from the task ledger).
    samplers: dict[str, str] = attrs.field(factory=dict)
    plugins: Any = attrs.field(default=None, eq=False, repr=False)

    def split_names(self) -> list[str]:
        return list(self.splits)

    def sample(self, split: str) -> ServedTask:
        """A task of `split` drawn by its sampler; ValueError when no plugin knows it."""
        sampler, tasks = self.samplers[split], self.splits[split]
        ids = [t.task.id for t in tasks]
        picked = self.plugins.sample_task(sampler, ids, dict.fromkeys(ids))
        if picked is None:
            raise ValueError(
                f"split {split!r}: no installed plugin knows the sampler {sampler!r} "
                "(band:LOW-HIGH comes with agentenv-grading)"
            )
        return tasks[picked]

    def pick(self, split: str | None, index: int | None) -> ServedTask:
        """The task at (split, index); a split with a sampler and no index: a drawn task;
        neither: the first task served. ValueError saying why not."""
        if split in self.samplers and index is None:
            return self.sample(split)
        if split is None and index is None:
            for tasks in self.splits.values():
                if tasks:
                    return tasks[0]
        if split is None or index is None:
            raise ValueError(
                "split and index go together: give both, or neither for the first task served"
            )
        if split not in self.splits:
            raise ValueError(
                f"there is no split {split!r}{did_you_mean(split, self.splits)}; "
                f"the splits are {', '.join(self.splits)}"
            )
        tasks = self.splits[split]
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(tasks):
            raise ValueError(
                f"split {split!r} has {len(tasks)} task(s), so it has no task {index!r}"
            )
        return tasks[index]

    def find(self, name: str) -> ServedTask:
        """A task by name (or id) in any split."""
        for tasks in self.splits.values():
            for t in tasks:
                if name in (t.task.name, t.task.id):
                    return t
        names = sorted({t.task.name for ts in self.splits.values() for t in ts})
        raise ValueError(
            f"no task {name!r} is served{did_you_mean(name, names)}; served: {', '.join(names)}"
        )

    def reward_of(self, served: ServedTask, record: Mapping[str, Any]) -> float | None:
        """The reward of a finished episode's record (see `build_app`'s `reward`)."""
        scores = verifier_scores(record)
        if self.reward is None:
            counted = [
                s for s in (record.get("scores") or {}).values() if isinstance(s, (int, float))
            ]
            return float(sum(counted) / len(counted)) if counted else None
        if isinstance(self.reward, str):
            vid = served.verifier_ids.get(self.reward, self.reward)
            return scores.get(vid)
        return float(self.reward(scores))


def verifier_scores(record: Mapping[str, Any]) -> dict[str, float]:
    """Every verifier's score, keyed by verifier id."""
    return {
        vid: float(v["score"])
        for vid, v in (record.get("verifiers") or {}).items()
        if isinstance(v, Mapping) and isinstance(v.get("score"), (int, float))
    }


def load(
    bundle: Any,
    plugins: Any,
    *,
    reward: Reward = None,
    samplers: Mapping[str, str] | None = None,
    sandbox: str | None = None,
) -> Served:
    """Load the bundle(s) of `bundle` (a folder, an installed bundle's name, or a mapping of
    split names to those) and decide what is served; `BundleError` when nothing can be;
    ValueError for a sampler of an unknown split or one no plugin knows (tried once here).
    `sandbox` replaces the provider of every step that chooses one (`run --sandbox`)."""
    from agent_env.bundles import load_bundle

    if sandbox is not None:
        from agent_env.sandbox import provider_chain

        provider_chain(sandbox, plugins.sandbox_providers)  # an unknown name: a did-you-mean

    if reward is not None and not (isinstance(reward, str) or callable(reward)):
        raise ValueError(
            f"reward= is a verifier id, a step id or a function of the scores, not {reward!r}"
        )
    if isinstance(bundle, Mapping):
        if not bundle:
            raise BundleError("build_app: the mapping of splits to bundles is empty")
        loaded = {str(k): load_bundle(_spec(v), plugins) for k, v in bundle.items()}
        groups = {k: (k, list(b.tasks.values())) for k, b in loaded.items()}
        order = [(k, k) for k in loaded]
    else:
        one = load_bundle(_spec(bundle), plugins)
        loaded = {ALL: one}
        if ALL in one.evals:
            raise BundleError(
                f"{one.root}: eval 'all' has the name of the split that holds every task; "
                "rename the eval"
            )
        order = [(ALL, ALL), *((name, ALL) for name in one.evals)]
        groups = {ALL: (ALL, list(one.tasks.values()))}
        groups.update({name: (ALL, list(one.eval(name))) for name in one.evals})
    if sandbox is not None:
        from agent_env.openenv.host import on_sandbox

        groups = {k: (key, on_sandbox(tasks, sandbox)) for k, (key, tasks) in groups.items()}
    left_out: list[str] = []
    splits: dict[str, list[ServedTask]] = {}
    for split, key in order:
        _, tasks = groups[split]
        out: list[ServedTask] = []
        for task in tasks:
            why, made = _serve(task, key, split, len(out))
            if made is None:
                line = f"left out: task {task.name!r}: {why}"
                if line not in left_out:
                    left_out.append(line)
                continue
            out.append(made)
        splits[split] = out
    if not any(splits.values()):
        raise BundleError("no task can be served as an OpenEnv env", left_out)
    if isinstance(reward, str):
        missing = [
            t.task.name
            for ts in splits.values()
            for t in ts
            if reward not in t.verifier_ids and reward not in t.verifier_ids.values()
        ]
        if missing:
            raise ValueError(
                f"reward={reward!r}: task {missing[0]!r} records no score at step or verifier "
                f"{reward!r}; name one of its scoring steps"
            )
    names = list(dict.fromkeys(b.name.replace(".", "-") for b in loaded.values()))
    served = Served(
        bundles=loaded,
        splits=splits,
        env_name="+".join(names),
        reward=reward,
        left_out=left_out,
        samplers=dict(samplers or {}),
        plugins=plugins,
    )
    if "*" in served.samplers:  # every split
        every = served.samplers.pop("*")
        served.samplers.update(
            {k: every for k, ts in served.splits.items() if ts and k not in served.samplers}
        )
    for split in served.samplers:
        if not served.splits.get(split):
            raise ValueError(
                f"sampler for split {split!r}: there is no such split with tasks"
                f"{did_you_mean(split, served.splits)}; the splits are {', '.join(served.splits)}"
            )
        served.sample(split)
    return served


def _spec(value: Any) -> str:
    return str(value) if isinstance(value, Path) else value


def _serve(task: Any, key: str, split: str, index: int) -> tuple[str, ServedTask | None]:
    prompts = [s for s in task.steps if s.type == "prompt_agent"]
    agents = sorted({s.agent_name for s in prompts})
    if len(agents) != 1:
        return (
            f"it prompts {len(agents)} agents ({', '.join(agents)}); an episode plays exactly one"
            if agents
            else "it prompts no agent, so there is no turn to play"
        ), None
    agent = agents[0]
    deploys = [s for s in task.steps if s.type == "deploy_agent" and s.agent_name == agent]
    if len(deploys) != 1:
        return f"agent {agent!r} is deployed by {len(deploys)} deploy_agent steps, not one", None
    retried = [s.id for s in task.steps if getattr(s, "retry_config", None) is not None]
    if retried:
        return f"step {retried[0]!r} has retry_config (a played turn cannot be replayed)", None
    first = prompts[0]
    verifier_ids = {
        s.id: s.verifier_id for s in task.steps if isinstance(getattr(s, "verifier_id", None), str)
    }
    return "", ServedTask(
        key=key,
        task=task,
        split=split,
        index=index,
        agent=agent,
        prompt=first.text(),
        system_prompt=first.system_prompt or deploys[0].system_prompt,
        verifier_ids=verifier_ids,
    )
