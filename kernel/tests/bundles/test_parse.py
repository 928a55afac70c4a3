"""Parsing a bundle folder and reporting every problem at once, each naming file, step, field."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest

from agent_env import hookimpl
from agent_env.bundles import load_bundle
from agent_env.errors import BundleError
from agent_env.models import Step


def problems_of(root: Path, plugins: Any) -> list[str]:
    with pytest.raises(BundleError) as info:
        load_bundle(str(root), plugins)
    return info.value.problems


def test_hello_bundle_parses(hello_bundle: Path, plugins: Any) -> None:
    bundle = load_bundle(str(hello_bundle), plugins)
    prefix = "@local/" + str(hello_bundle.resolve()).lstrip("/")
    assert bundle.name == "hello-bundle"
    assert bundle.id_prefix == prefix
    assert bundle.description == "Hello bundle"
    task = bundle.tasks["hello"]
    assert task.id == f"{prefix}/hello"
    assert [s.id for s in task.steps] == ["box", "load", "check"]
    assert type(task.steps[0]).type == "deploy_sandbox"
    greeting = bundle.artifacts["greeting"]
    assert (greeting.kind, greeting.id, list(greeting.files)) == (
        "file",
        f"{prefix}/greeting",
        ["greeting.txt"],
    )
    assert greeting.content_path == hello_bundle.resolve() / "artifacts/greeting/greeting.txt"
    assert bundle.evals["smoke"].tasks == ["hello"]
    assert bundle.eval("smoke") == [task]
    assert bundle.provenance == {"source": "folder", "path": str(hello_bundle.resolve())}


def test_relative_folder_spec_gets_absolute_ids(
    hello_bundle: Path, plugins: Any, monkeypatch: Any
) -> None:
    monkeypatch.chdir(hello_bundle.parent)
    bundle = load_bundle("./hello-bundle", plugins)
    assert bundle.tasks["hello"].id == "@local/" + str(hello_bundle.resolve() / "hello").lstrip("/")


def test_artifact_kinds_are_inferred(hello_bundle: Path, plugins: Any, writer: Any) -> None:
    writer(hello_bundle / "artifacts/image/Dockerfile", "FROM python:3.11-slim\n")
    writer(hello_bundle / "artifacts/image/app.py", "print(1)\n")
    writer(hello_bundle / "artifacts/set/a.txt", "a")
    writer(hello_bundle / "artifacts/set/sub/b.txt", "b")
    writer(hello_bundle / "artifacts/nested/only/one.txt", "x")
    bundle = load_bundle(str(hello_bundle), plugins)
    kinds = {name: a.kind for name, a in bundle.artifacts.items()}
    assert kinds == {"greeting": "file", "image": "image", "set": "fileset", "nested": "fileset"}
    assert list(bundle.artifacts["set"].files) == ["a.txt", "sub/b.txt"]


def test_envs_agents_skills_and_aliases(hello_bundle: Path, plugins: Any, writer: Any) -> None:
    writer(hello_bundle / "envs/shop/Dockerfile", "FROM python:3.11-slim\n")
    writer(
        hello_bundle / "envs/calc/env.toml", 'type = "mcp_server"\ncommand = "python server.py"\n'
    )
    writer(hello_bundle / "agents/oracle/agent.toml", 'type = "scripted"\n')
    writer(hello_bundle / "skills/greet/SKILL.md", "---\nname: greet\n---\nSay hi.\n")
    writer(hello_bundle / "aliases.toml", 'hi = "hello"\nall = "smoke"\n')
    bundle = load_bundle(str(hello_bundle), plugins)
    assert sorted(bundle.envs) == ["calc", "shop"]
    assert bundle.envs["calc"].config["command"] == "python server.py"
    assert bundle.envs["shop"].type == "mcp_server"
    assert bundle.agents["oracle"].type == "scripted"
    assert list(bundle.skills) == ["greet"]
    assert bundle.task("hi") is bundle.tasks["hello"]
    assert bundle.eval("all") == [bundle.tasks["hello"]]


def test_every_problem_is_reported_at_once(hello_bundle: Path, plugins: Any, writer: Any) -> None:
    steps = [
        {"id": "box", "type": "deploy_sandbox", "sandbox_name": "b"},
        {"id": "load", "type": "load_artifact", "artifact_id": "greting", "sandbox_nmae": "b"},
        {"id": "shout", "type": "shout_loudly"},
    ]
    writer(hello_bundle / "tasks/t.json", json.dumps(steps))
    writer(hello_bundle / "evals/smoke.toml", 'tasks = ["hello", "helo"]\n')
    found = problems_of(hello_bundle, plugins)
    assert found == [
        "evals/smoke.toml: tasks: no task 'helo' in the bundle (did you mean 'hello'?)",
        "tasks/t.json: step 'box': sandbox_mode: required",
        "tasks/t.json: step 'load': unknown field 'sandbox_nmae' (did you mean 'sandbox_name'?)",
        "tasks/t.json: step 'shout': unknown step type 'shout_loudly'; known: deploy_sandbox, "
        "load_artifact, teardown_sandboxes, verify_sandbox",
    ]


def test_missing_artifact_is_reported_with_did_you_mean(
    hello_bundle: Path, plugins: Any, writer: Any, hello_steps: list
) -> None:
    hello_steps[1]["artifact_id"] = "greting"
    writer(hello_bundle / "tasks/hello.json", json.dumps(hello_steps))
    assert problems_of(hello_bundle, plugins) == [
        "tasks/hello.json: step 'load': artifact_id: no artifact 'greting' in the bundle "
        "(did you mean 'greeting'?); artifacts: greeting"
    ]


def test_artifact_list_refs_and_full_ids(
    hello_bundle: Path, plugins: Any, writer: Any, hello_steps: list
) -> None:
    prefix = "@local/" + str(hello_bundle.resolve()).lstrip("/")
    hello_steps[1] = {
        "id": "load",
        "type": "load_artifact",
        "sandbox_name": "box",
        "artifacts": [
            {"id": f"{prefix}/greeting"},
            {"id": "@local/elsewhere/x"},
            {"id": f"{prefix}/nothing"},
        ],
    }
    writer(hello_bundle / "tasks/hello.json", json.dumps(hello_steps))
    found = problems_of(hello_bundle, plugins)
    assert found == [
        "tasks/hello.json: step 'load': artifacts[2].id: no artifact 'nothing' in "
        "the bundle; artifacts: greeting"
    ]


def test_bad_json_is_reported_with_line_and_column(
    hello_bundle: Path, plugins: Any, writer: Any
) -> None:
    writer(hello_bundle / "tasks/broken.json", '[\n  {"id": "a",\n   "type": }\n]\n')
    assert problems_of(hello_bundle, plugins) == [
        "tasks/broken.json: not valid JSON: Expecting value (line 3, column 12)"
    ]


def test_duplicate_keys_are_errors(hello_bundle: Path, plugins: Any, writer: Any) -> None:
    writer(
        hello_bundle / "tasks/dup.json",
        '[{"id": "box", "type": "deploy_sandbox", "sandbox_name": "a", "sandbox_name": "b",'
        ' "sandbox_mode": "vm", "env_vars": {"A": "1", "A": "2"}}]',
    )
    assert problems_of(hello_bundle, plugins) == [
        "tasks/dup.json: step 'box': duplicate key 'sandbox_name'",
        "tasks/dup.json: step 'box': env_vars: duplicate key 'A'",
    ]


def test_empty_task_and_non_array(hello_bundle: Path, plugins: Any, writer: Any) -> None:
    writer(hello_bundle / "tasks/empty.json", "[]")
    writer(hello_bundle / "tasks/obj.json", '{"id": "x"}')
    assert problems_of(hello_bundle, plugins) == [
        "tasks/empty.json: the task has no steps; a task needs at least one step",
        "tasks/obj.json: a task must be a JSON array of step objects, got an object",
    ]


def test_duplicate_ids_and_bad_depends_on(hello_bundle: Path, plugins: Any, writer: Any) -> None:
    box = {"type": "deploy_sandbox", "sandbox_name": "b", "sandbox_mode": "vm"}
    steps = [
        {"id": "a", **box},
        {"id": "a", **box, "sandbox_name": "c"},
        {"id": "b", **box, "depends_on": ["c"]},
        {"id": "c", **box, "depends_on": [{"task_step_id": "zz"}]},
        {"id": "d", **box, "depends_on": ["d"]},
    ]
    writer(hello_bundle / "tasks/dag.json", json.dumps(steps))
    found = problems_of(hello_bundle, plugins)
    assert "tasks/dag.json: step 'a': duplicate step id" in found
    assert (
        "tasks/dag.json: step 'b': depends_on: 'c' comes later in the task; "
        "a step may only depend on earlier steps"
    ) in found
    assert "tasks/dag.json: step 'c': depends_on: unknown step 'zz'" in found
    assert "tasks/dag.json: step 'd': depends_on: a step cannot depend on itself" in found
    assert len(found) == 4


def test_retry_config_must_point_backwards(
    hello_bundle: Path, plugins: Any, writer: Any, hello_steps: list
) -> None:
    hello_steps[0]["retry_config"] = {"retry_from_step_id": "check"}
    hello_steps[2]["retry_config"] = {"retry_from_step_id": "lod"}
    hello_steps[1]["retry_config"] = {"retry_from_step_id": "load", "max_retries": -1}
    writer(hello_bundle / "tasks/hello.json", json.dumps(hello_steps))
    found = problems_of(hello_bundle, plugins)
    assert found == [
        "tasks/hello.json: step 'box': retry_config.retry_from_step_id: 'check' is a later step; "
        "a retry restarts from this step or an earlier one",
        "tasks/hello.json: step 'load': retry_config.max_retries: must be 0 or more, got -1",
        "tasks/hello.json: step 'check': retry_config.retry_from_step_id: 'lod' is no step of the "
        "task (did you mean 'load'?); a retry restarts from this step or an earlier one",
    ]


def test_step_check_messages_are_reported(
    hello_bundle: Path, plugins: Any, writer: Any, hello_steps: list
) -> None:
    hello_steps[2]["criteria"].append({"type": "probe_file_existz", "paths": ["x"]})
    writer(hello_bundle / "tasks/hello.json", json.dumps(hello_steps))
    assert problems_of(hello_bundle, plugins) == [
        "tasks/hello.json: step 'check': criteria[1]: unknown criterion type 'probe_file_existz'"
    ]


def test_eval_problems(hello_bundle: Path, plugins: Any, writer: Any) -> None:
    writer(hello_bundle / "evals/smoke.toml", 'tasks = ["hello", "hello"]\ntask = 1\n')
    writer(hello_bundle / "evals/empty.toml", "tasks = []\n")
    writer(hello_bundle / "evals/bad.toml", "tasks = [\n")
    found = problems_of(hello_bundle, plugins)
    assert found[0].startswith("evals/bad.toml: not valid TOML: ")
    assert found[1:] == [
        "evals/empty.toml: tasks: an eval needs at least one task",
        "evals/smoke.toml: unknown key 'task' (did you mean 'tasks'?)",
        "evals/smoke.toml: tasks: 'hello' is listed twice",
    ]


def test_kind_folder_case_mistakes(hello_bundle: Path, plugins: Any, writer: Any) -> None:
    (hello_bundle / "tasks").rename(hello_bundle / "Tasks")
    (hello_bundle / "evals").rename(hello_bundle / "eval")
    writer(hello_bundle / "tasks-notes/readme.txt", "ignored")
    found = problems_of(hello_bundle, plugins)
    assert found == [
        "Tasks/: not a kind folder; names are case-sensitive (did you mean 'tasks/'?)",
        "eval/: not a kind folder; names are case-sensitive (did you mean 'evals/'?)",
    ]


def test_not_a_bundle(tmp_path: Path, plugins: Any) -> None:
    (tmp_path / "src").mkdir()
    with pytest.raises(BundleError, match="not a bundle: it has none of tasks/, evals/"):
        load_bundle(str(tmp_path), plugins)


def test_symlinks_out_of_the_bundle_are_rejected(
    hello_bundle: Path, plugins: Any, tmp_path: Path, writer: Any
) -> None:
    secret = writer(tmp_path / "outside" / "secret.txt", "s3cret")
    os.symlink(secret, hello_bundle / "artifacts/greeting/leak.txt")
    os.symlink(tmp_path / "outside", hello_bundle / "artifacts/outdir")
    os.symlink(
        hello_bundle / "artifacts/greeting/greeting.txt", hello_bundle / "artifacts/greeting/ok.txt"
    )
    found = problems_of(hello_bundle, plugins)
    outside = (tmp_path / "outside").resolve()
    assert found == [
        f"artifacts/greeting/leak.txt: a symlink to {outside / 'secret.txt'}, outside the bundle; "
        "bundles may not link out",
        f"artifacts/outdir: a symlink to {outside}, outside the bundle; bundles may not link out",
    ]


def test_symlink_inside_the_bundle_is_followed(hello_bundle: Path, plugins: Any) -> None:
    os.symlink(hello_bundle / "artifacts/greeting", hello_bundle / "artifacts/again")
    bundle = load_bundle(str(hello_bundle), plugins)
    assert list(bundle.artifacts["again"].files) == ["greeting.txt"]


def test_skill_and_env_folder_requirements(hello_bundle: Path, plugins: Any, writer: Any) -> None:
    writer(hello_bundle / "skills/greet/skill.md", "x")
    writer(hello_bundle / "envs/shop/server.py", "x")
    writer(hello_bundle / "artifacts/empty/.keep/__pycache__/x.pyc", "")
    found = problems_of(hello_bundle, plugins)
    assert found == [
        "artifacts/empty: an artifact folder has no files",
        "envs/shop: needs a Dockerfile or an env.toml",
        "skills/greet: a skill needs SKILL.md (found 'skill.md'; names are case-sensitive)",
    ]


def test_aliases_must_point_somewhere(hello_bundle: Path, plugins: Any, writer: Any) -> None:
    writer(hello_bundle / "aliases.toml", 'hi = "helo"\nhello = "smoke"\nn = 3\n')
    assert sorted(problems_of(hello_bundle, plugins)) == [
        "aliases.toml: hello: the alias hides the task or eval of the same name",
        "aliases.toml: hi: no task or eval 'helo' in the bundle (did you mean 'hello'?)",
        "aliases.toml: n: expected the name of a task or eval, got 3",
    ]


def test_unknown_task_name_suggests(hello_bundle: Path, plugins: Any) -> None:
    bundle = load_bundle(str(hello_bundle), plugins)
    with pytest.raises(BundleError, match=r"no task 'helo' \(did you mean 'hello'\?\)"):
        bundle.task("helo")


def test_artifact_and_skill_names_must_differ(
    hello_bundle: Path, plugins: Any, writer: Any
) -> None:
    writer(hello_bundle / "skills/greeting/SKILL.md", "x")
    assert problems_of(hello_bundle, plugins) == [
        "artifacts/greeting and skills/greeting: share a name; steps name artifacts and skills "
        "alike, so rename one"
    ]


def test_a_linked_out_task_is_reported_once(
    hello_bundle: Path, plugins: Any, tmp_path: Path, writer: Any
) -> None:
    outside = writer(tmp_path / "elsewhere.json", "[]")
    os.symlink(outside, hello_bundle / "tasks/linked.json")
    found = problems_of(hello_bundle, plugins)
    assert len(found) == 1 and found[0].startswith("tasks/linked.json: a symlink to ")


def test_file_name_case_mistakes(hello_bundle: Path, plugins: Any, writer: Any) -> None:
    writer(hello_bundle / "tasks/other.JSON", "[]")
    writer(hello_bundle / "Aliases.toml", "")
    writer(hello_bundle / "artifacts/img/dockerfile", "FROM x\n")
    writer(hello_bundle / "artifacts/img/app.py", "")
    writer(hello_bundle / "artifacts/typed/artifact.toml", 'type = "docker_imag"\n')
    writer(hello_bundle / "artifacts/typed/a.txt", "")
    assert problems_of(hello_bundle, plugins) == [
        "Aliases.toml: names are case-sensitive (did you mean 'aliases.toml'?)",
        "artifacts/img/dockerfile: names are case-sensitive (did you mean 'Dockerfile'?)",
        "artifacts/typed/artifact.toml: type: unknown artifact type 'docker_imag' "
        "(did you mean 'docker_image'?)",
        "tasks/other.JSON: names are case-sensitive (did you mean 'other.json'?)",
    ]


def test_step_classes_can_declare_their_reference_fields(
    hello_bundle: Path, plugins: Any, register_plugin: Any, writer: Any
) -> None:
    @attrs.frozen(kw_only=True)
    class Probe(Step):
        type: ClassVar[str] = "probe_env"
        bundle_refs: ClassVar[dict] = {"env": ("target",), "artifact": ("inputs[]",)}
        target: str
        inputs: list[str] = attrs.field(factory=list)
        artifact_id: str | None = None  # not a reference for this type: bundle_refs says so

    class Plugin:
        @hookimpl
        def agentenv_register_step_types(self, registry: Any) -> None:
            registry.add(Probe)

    register_plugin(Plugin(), "probe")
    writer(hello_bundle / "envs/shop/env.toml", "")
    writer(
        hello_bundle / "tasks/p.json",
        json.dumps(
            [
                {
                    "id": "p",
                    "type": "probe_env",
                    "target": "shpo",
                    "inputs": ["greeting", "nope"],
                    "artifact_id": "anything",
                },
            ]
        ),
    )
    assert problems_of(hello_bundle, plugins) == [
        "tasks/p.json: step 'p': target: no env 'shpo' in the bundle (did you mean 'shop'?); envs: shop",
        "tasks/p.json: step 'p': inputs[1]: no artifact 'nope' in the bundle; artifacts: greeting",
    ]


def test_eval_may_name_tasks_by_full_id(hello_bundle: Path, plugins: Any, writer: Any) -> None:
    prefix = "@local/" + str(hello_bundle.resolve()).lstrip("/")
    writer(hello_bundle / "evals/ids.toml", f'tasks = ["{prefix}/hello", "@local/other/task"]\n')
    bundle = load_bundle(str(hello_bundle), plugins)
    assert bundle.evals["ids"].tasks == ["hello", "@local/other/task"]
    assert bundle.eval("ids") == [bundle.tasks["hello"]]
