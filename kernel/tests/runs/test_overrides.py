"""Run-wide options that replace what the tasks name (`--sandbox`, `--judge-model`,
`--user-model`) in the steps whose type declares them, the selection of tasks by evals, and the
provider chains `--sandbox a,b`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest

from agent_env.bundles.model import Bundle, EvalSpec, Task
from agent_env.errors import PluginError, SandboxError
from agent_env.models import RunOverride, Step
from agent_env.registry import Registry
from agent_env.runs import overrides, selection
from agent_env.runs.options import RunOptions
from agent_env.sandbox import SandboxProvider, provider_chain
from agent_env.sandboxes.local import LocalProvider


@attrs.frozen(kw_only=True)
class Deploy(Step):
    type: ClassVar[str] = "t_deploy"
    run_overrides: ClassVar[dict[str, RunOverride]] = {"provider": RunOverride(("sandbox_type",))}
    sandbox_type: str | None = None


@attrs.frozen(kw_only=True)
class Judge(Step):
    type: ClassVar[str] = "t_judge"
    run_overrides: ClassVar[dict[str, RunOverride]] = {
        "judge_model": RunOverride(("default_model",)),
        "provider": RunOverride(("judge_sandbox_type",)),
    }
    default_model: str = "as-written"
    judge_sandbox_type: str | None = None


@attrs.frozen(kw_only=True)
class Lookalike(Step):
    """Has the fields a judge has, and declares no run option: no flag touches them."""

    type: ClassVar[str] = "t_lookalike"
    default_model: str = "as-written"
    sandbox_type: str | None = None
    user_model: str | None = None


@attrs.frozen(kw_only=True)
class User(Step):
    type: ClassVar[str] = "t_user"
    run_overrides: ClassVar[dict[str, RunOverride]] = {
        "user_model": RunOverride(("user_model",), unused="no user runs in this test")
    }
    user_model: str | None = None


@attrs.frozen(kw_only=True)
class Plain(Step):
    type: ClassVar[str] = "t_plain"


def task(name: str, *steps: Step) -> Task:
    return Task(
        name=name, id=f"@local/b/{name}", steps=list(steps), path=Path(f"tasks/{name}.json")
    )


def bundle(tasks: list[Task], evals: dict[str, list[str]] | None = None) -> Bundle:
    return Bundle(
        root=Path("b"),
        name="b",
        id_prefix="@local/b",
        description=None,
        tasks={t.name: t for t in tasks},
        evals={
            n: EvalSpec(name=n, id=f"@local/b/{n}", tasks=ts, path=Path(f"evals/{n}.toml"))
            for n, ts in (evals or {}).items()
        },
        envs={},
        agents={},
        artifacts={},
        skills={},
        aliases={},
        requires=[],
    )


def test_the_overrides_set_the_fields_of_the_steps_that_have_them():
    tasks = [
        task("a", Deploy(id="d", sandbox_type="local"), Judge(id="j"), Plain(id="p")),
        task("b", Plain(id="p")),
    ]
    options = RunOptions(spec="b", provider="docker,local", judge_model="m")
    out, lines = overrides.apply(tasks, options)
    deploy, judge, plain = out[0].steps
    assert deploy.sandbox_type == "docker,local" and judge.default_model == "m"
    assert judge.judge_sandbox_type == "docker,local"  # a judge agent deploys there too
    assert plain is tasks[0].steps[2] and out[1].steps[0] is tasks[1].steps[0]
    assert tasks[0].steps[0].sandbox_type == "local"  # the tasks as written are unchanged
    assert lines == [
        "--sandbox docker,local: applies to 2 step(s) that choose a sandbox in 1 task(s)",
        "--judge-model m: applies to 1 judge(s) in 1 task(s)",
    ]


def test_an_override_no_step_takes_says_it_changes_nothing():
    out, lines = overrides.apply([task("a", Plain(id="p"))], RunOptions(user_model="u"))
    assert lines == ["--user-model u: no selected task has simulated users, so it changes nothing"]
    assert overrides.apply(out, RunOptions()) == (out, [])


def test_a_step_whose_type_declares_no_option_keeps_its_fields():
    look = Lookalike(id="l")
    options = RunOptions(provider="local", judge_model="m", user_model="u")
    out, lines = overrides.apply([task("a", look)], options)
    assert out[0].steps[0] is look and look.default_model == "as-written"
    assert lines == [
        "--sandbox local: no selected task has steps that choose a sandbox, so it changes nothing",
        "--judge-model m: no selected task has judges, so it changes nothing",
        "--user-model u: no selected task has simulated users, so it changes nothing",
    ]


def test_an_option_a_type_takes_but_does_not_act_on_yet_says_why():
    out, lines = overrides.apply([task("a", User(id="u"))], RunOptions(user_model="m"))
    assert out[0].steps[0].user_model == "m"
    assert lines == [
        "--user-model m: set on 1 simulated user(s) in 1 task(s), but no user runs in this test"
    ]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            {"judge_modle": RunOverride(("default_model",))},
            "step type 't_bad': run_overrides: 'judge_modle' is not a run option "
            "(did you mean 'judge_model'?); run options: provider, judge_model, user_model",
        ),
        (
            {"judge_model": RunOverride(("default_modle",))},
            "step type 't_bad': run_overrides['judge_model']: 't_bad' has no field "
            "'default_modle' (did you mean 'default_model'?)",
        ),
        (
            {"judge_model": ("default_model",)},
            "step type 't_bad': run_overrides['judge_model']: expected a RunOverride",
        ),
    ],
)
def test_a_wrong_declaration_names_the_step_type_and_what_was_meant(table, message):
    bad = attrs.make_class(
        "Bad",
        {"default_model": attrs.field(default="x")},
        bases=(Step,),
        frozen=True,
        kw_only=True,
    )
    bad.type = "t_bad"
    bad.run_overrides = table
    with pytest.raises(PluginError, match=re.escape(message)):
        overrides.apply([task("a", bad(id="b"))], RunOptions(judge_model="m"))


def test_a_resumed_bundle_gets_the_overrides_too():
    b = bundle([task("a", Judge(id="j"))])
    new, lines = overrides.apply_to_bundle(b, RunOptions(judge_model="m"))
    assert new.tasks["a"].steps[0].default_model == "m" and lines
    assert b.tasks["a"].steps[0].default_model == "as-written"


def test_with_evals_and_no_selection_only_eval_tasks_run_and_the_rest_are_named():
    b = bundle([task("x"), task("hello"), task("other")], {"smoke": ["hello", "x"]})
    chosen = selection.select(b)
    assert [t.name for t in chosen.tasks] == ["x", "hello"]  # the bundle's order
    assert chosen.evals == ["smoke"]
    assert chosen.not_run_lines() == [
        "tasks/other.json is not named by any eval, so it did not run; run it with --task other"
    ]
    assert selection.select(b, evals=["smoke"]).not_run == []
    assert [t.name for t in selection.select(b, tasks=["other"]).tasks] == ["other"]
    assert [t.name for t in selection.select(bundle([task("a"), task("b")])).tasks] == ["a", "b"]


class Machine(SandboxProvider):
    """A provider that builds images on this machine (as docker does)."""

    type = "machine"
    can_build_images = True
    on_this_machine = True

    async def create(self, spec: Any) -> Any:
        raise SandboxError("unused")

    async def connect(self, info: Any) -> Any:
        raise SandboxError("unused")

    async def reap(self, *, adopt: Any = ()) -> list[str]:
        return []


class Remote(Machine):
    type = "remote"
    on_this_machine = False


@pytest.fixture
def providers() -> Registry:
    registry: Registry = Registry("sandbox provider")
    for cls in (LocalProvider, Machine, Remote):
        registry.add(cls)
    return registry


def test_local_means_this_machine_and_chains_keep_their_order(providers):
    def chain(spec: str) -> tuple[str, ...]:
        return provider_chain(spec, providers, local_machine=True)

    assert chain("local") == ("local", "machine")
    assert chain("remote, local") == ("remote", "local", "machine")
    assert chain("machine,local") == ("machine", "local")
    assert chain("remote") == ("remote",)
    # a plain sandbox asked on local stays there; an explicit chain is kept as written
    assert provider_chain("local", providers) == ("local",)
    assert provider_chain("remote,local", providers) == ("remote", "local")


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        ("locl,remote", PluginError, "unknown sandbox provider 'locl' (did you mean 'local'?)"),
        ("local,", SandboxError, "expected a provider name or a comma-separated fallback chain"),
        ("", SandboxError, "expected a provider name"),
    ],
)
def test_a_bad_chain_is_refused_with_what_was_meant(providers, spec, error, message):
    with pytest.raises(error, match=re.escape(message)):
        provider_chain(spec, providers)


def test_a_field_given_as_a_string_is_refused_not_split():
    with pytest.raises(TypeError, match="a tuple of field names, not the string 'default_model'"):
        RunOverride("default_model")  # type: ignore[arg-type]
    assert RunOverride(["default_model"]).fields == ("default_model",)  # type: ignore[arg-type]
