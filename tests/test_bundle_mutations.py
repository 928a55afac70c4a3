"""The bundle promise under random mutations (hypothesis): take the valid bundle of
`promise_helpers`, drop, rename, retype or add a key at any depth of any of its JSON and TOML
files, or replace a path with a traversal, and run it. Every mutation ends one of two ways:

- refused: exit 2, a first stderr line `Error: ...` naming the mutated file, no traceback,
  and the state folder exactly as before;
- run: no traceback, and the task passes, scores below 1 or is unscored; it never fails *at a
  step*, which would mean validation let through something only the run could find.

A fixed budget (`AGENT_ENV_MUTATIONS`, default 60 examples) and a seed printed on failure
(`AGENT_ENV_MUTATION_SEED=N` replays it).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, seed, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from promise_helpers import FILES, assert_refused, base_bundle, state_of, write_files

BUDGET = int(os.environ.get("AGENT_ENV_MUTATIONS") or 60)
SEED = int(os.environ.get("AGENT_ENV_MUTATION_SEED") or random.SystemRandom().randrange(2**32))

#: The files a mutation may change: every JSON and TOML file of the bundle.
DATA_FILES = sorted(f for f in FILES if f.endswith((".json", ".toml")))
#: Fields that hold a path or a bundle reference: a traversal replaces their strings.
PATH_KEYS = frozenset({"paths", "destination_path", "script", "base_dir", "artifact_id"})
TRAVERSALS = ("../../../etc/passwd", "../..", "a/../../../b", "/app/../../etc/shadow")
#: Run-time failures that are not validation gaps: the provider is chosen when the run starts
#: (`--sandbox`, `[sandbox] default`), so what only one provider refuses is found then. The
#: local provider maps nothing but /app (a step's default destination `/loaded` included).
PROVIDER_LIMITS = ("the only sandbox path the local provider maps",)
VALUES: tuple[Any, ...] = (3, -1, 2.5, True, False, "text", "", [], [1, "a"], {}, {"k": "v"})


def load(rel: str, text: str) -> Any:
    return json.loads(text) if rel.endswith(".json") else tomllib.loads(text)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(value)


def dump(rel: str, data: Any) -> str:
    if rel.endswith(".json"):
        return json.dumps(data, indent=1)
    return "".join(f"{json.dumps(k)} = {toml_value(v)}\n" for k, v in data.items())


def nodes(value: Any, path: tuple = ()) -> list[tuple]:
    """The path of every dict entry and list item under `value`."""
    out = []
    if isinstance(value, dict):
        for key, item in value.items():
            out.append((*path, key))
            out.extend(nodes(item, (*path, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.append((*path, index))
            out.extend(nodes(item, (*path, index)))
    return out


def containers(value: Any, path: tuple = ()) -> list[tuple]:
    """The path of every object (the root included)."""
    out = [path] if isinstance(value, dict) else []
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return out
    for key, item in items:
        out.extend(containers(item, (*path, key)))
    return out


def at(value: Any, path: tuple) -> Any:
    for part in path:
        value = value[part]
    return value


def json_type(value: Any) -> str:
    for name, kinds in (("bool", bool), ("number", (int, float)), ("string", str)):
        if isinstance(value, kinds):
            return name
    return type(value).__name__


@st.composite
def mutations(draw) -> tuple[str, str, Any, str]:
    """(file, kind, mutated data, a description of the mutation)."""
    rel = draw(st.sampled_from(DATA_FILES))
    data = load(rel, FILES[rel] if isinstance(FILES[rel], str) else json.dumps(FILES[rel]))
    kinds = ["drop", "rename", "retype", "add", "traverse"]
    kind = draw(st.sampled_from(kinds))
    all_nodes = nodes(data)
    if kind == "traverse":
        targets = [
            p
            for p in all_nodes
            if isinstance(at(data, p), str)
            and any(isinstance(part, str) and part in PATH_KEYS for part in p)
        ]
        if not targets:
            kind = "retype"
        else:
            path = draw(st.sampled_from(targets))
            new = draw(st.sampled_from(TRAVERSALS))
            at(data, path[:-1])[path[-1]] = new
            return rel, kind, data, f"{rel}: {list(path)} = {new!r}"
    if kind == "add":
        path = draw(st.sampled_from(containers(data)))
        key = draw(st.sampled_from(["extra", "zz_unknown", "Type", "id_"]))
        value = draw(st.sampled_from(VALUES))
        at(data, path)[key] = value
        return rel, kind, data, f"{rel}: add {list(path)}.{key} = {value!r}"
    keyed = [p for p in all_nodes if isinstance(p[-1], str)]
    if kind in ("drop", "rename") and keyed:
        path = draw(st.sampled_from(keyed))
        parent, key = at(data, path[:-1]), path[-1]
        value = parent.pop(key)
        if kind == "rename":
            new_key = draw(st.sampled_from([key + "s", key[:-1] or "x", key.upper()]))
            parent[new_key] = value
            return rel, kind, data, f"{rel}: rename {list(path)} -> {new_key!r}"
        return rel, kind, data, f"{rel}: drop {list(path)}"
    path = draw(st.sampled_from(all_nodes or [()]))
    old = at(data, path)
    choices = [v for v in VALUES if json_type(v) != json_type(old)]
    if rel.endswith(".toml"):
        choices = [v for v in choices if v != {} and v != []]  # keep TOML writable
    new = draw(st.sampled_from(choices))
    if path:
        at(data, path[:-1])[path[-1]] = new
    else:
        data = new
    return rel, "retype", data, f"{rel}: retype {list(path)}: {old!r} -> {new!r}"


def changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What differs between two `state_of` results (for the failure message)."""
    out = {}
    for part in sorted(set(before) | set(after)):
        old, new = set(map(str, before.get(part, []))), set(map(str, after.get(part, [])))
        if old != new:
            out[part] = {"added": sorted(new - old)[:3], "removed": sorted(old - new)[:3]}
    return out


@pytest.fixture
def cli(cli_runner, register_plugin):
    import agentenv_core_steps.hooks

    register_plugin(agentenv_core_steps.hooks, "core-steps")
    return cli_runner


def test_every_mutation_is_refused_cleanly_or_runs_to_an_outcome(cli, tmp_path, agent_env_home):
    root = tmp_path / "bundle"
    base_bundle(root)
    first = cli.invoke(["run", str(root)])
    assert first.exit_code == 0, first.output
    state = {"before": state_of(agent_env_home)}
    seen: dict[str, int] = {}

    @settings(
        max_examples=BUDGET,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @seed(SEED)
    @given(mutations())
    def check(mutation: tuple[str, str, Any, str]) -> None:
        rel, kind, data, description = mutation
        note(f"mutation: {description}; replay with AGENT_ENV_MUTATION_SEED={SEED}")
        shutil.rmtree(root)
        base_bundle(root)
        try:
            text = dump(rel, data)
        except TypeError:
            return  # a value TOML cannot hold (null): nothing a user could write
        write_files(root, {rel: text})
        result = cli.invoke(["run", str(root), "--json"])
        out, err = result.stdout, result.stderr
        if result.exit_code != 2:  # a run writes; the next refused bundle must leave that
            state["before"] = state_of(agent_env_home)
        assert "Traceback" not in out + err, err
        if result.exit_code == 2:
            assert_refused(result, rel.rsplit("/", 1)[-1])
            after = state_of(agent_env_home)
            assert after == state["before"], (
                f"a refused bundle wrote state: {changes(state['before'], after)}"
            )
            seen["refused"] = seen.get("refused", 0) + 1
            return
        assert result.exit_code in (0, 1), (result.exit_code, err)
        [record] = json.loads(out)["tasks"]
        outcome = record["outcome"]
        if outcome.startswith("failed at step"):
            assert any(limit in outcome for limit in PROVIDER_LIMITS), (outcome, err)
        seen["ran"] = seen.get("ran", 0) + 1

    try:
        check()
    except BaseException as e:
        raise AssertionError(
            f"the bundle promise broke (seed {SEED}; replay: AGENT_ENV_MUTATION_SEED={SEED}): {e}"
        ) from e
    print(f"{BUDGET} mutations, seed {SEED}: {seen}")
    assert seen.get("refused", 0) > 0
