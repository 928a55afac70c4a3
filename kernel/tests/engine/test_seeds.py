"""Seed tables and `{placeholder}` substitution in step fields."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import pytest

from agent_env.engine.seeds import (
    SeedTable,
    apply_seed,
    load_seed_table,
    substitute_text,
)
from agent_env.errors import BundleError
from agent_env.models import Step


@attrs.frozen(kw_only=True)
class Cmd(Step):
    type: ClassVar[str] = "cmd"
    command: str
    args: list[str] = attrs.field(factory=list)
    env: dict[str, str] = attrs.field(factory=dict)
    count: int = 1


def test_substitution_replaces_known_names_only():
    values = {"seed": 42, "city": "Lima", "trial": 3, "flag": True}
    assert substitute_text("seed={seed} city={city}", values) == "seed=42 city=Lima"
    assert substitute_text("{flag} {trial}", values) == "true 3"
    assert substitute_text("${HOME} {a,b} {unknown} {{seed}}", values) == (
        "${HOME} {a,b} {unknown} {seed}"
    )
    assert substitute_text('{"seed": 1}', values) == '{"seed": 1}'


def test_apply_seed_walks_step_fields_and_keeps_ids():
    step = Cmd(
        id="s-{seed}",
        command="run --seed {seed}",
        args=["{city}", "x"],
        env={"SEED": "{seed}"},
        depends_on=None,
    )
    [out] = apply_seed([step], {"seed": 7, "city": "Oslo", "trial": 0})
    assert out.id == "s-{seed}"
    assert out.command == "run --seed 7" and out.args == ["Oslo", "x"]
    assert out.env == {"SEED": "7"} and out.count == 1
    plain = Cmd(id="p", command="echo hi")
    assert apply_seed([plain], {"seed": 1, "trial": 0})[0] is plain


def test_seed_table_trials_cycle_and_defaults(tmp_path):
    (tmp_path / "seeds.toml").write_text(
        '[[trial]]\nseed = 11\ncity = "Paris"\n\n[[trial]]\nseed = 12\ncity = "Rome"\n'
    )
    table = load_seed_table(None, tmp_path)
    assert table.values(0) == {"trial": 0, "seed": 11, "city": "Paris"}
    assert table.values(3) == {"trial": 3, "seed": 12, "city": "Rome"}
    short = tmp_path / "short.toml"
    short.write_text("seeds = [5, 6]\n")
    assert load_seed_table(short, tmp_path).values(1) == {"trial": 1, "seed": 6}
    assert SeedTable().values(4) == {"trial": 4, "seed": 4}
    assert load_seed_table(None, tmp_path / "nowhere") == SeedTable()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("seeds = 3\n", "seeds must be a non-empty list"),
        (
            "[[trial]]\nseed = [1]\n",
            "trial 1: seed must be a number, string or boolean",
        ),
        ("[[trial]]\ntrial = 2\n", "'trial' is set by the engine"),
        ("seed = [1]\n", "unknown key 'seed' (did you mean 'seeds'?)"),
        ("seeds = [1\n", "seeds.toml"),
    ],
)
def test_bad_seed_tables_name_the_file_and_problem(tmp_path, text, problem):
    path = tmp_path / "seeds.toml"
    path.write_text(text)
    with pytest.raises(BundleError) as err:
        load_seed_table(path)
    assert str(path) in str(err.value) and problem in str(err.value)


def test_missing_seed_file_is_an_error(tmp_path):
    with pytest.raises(BundleError, match="no such file"):
        load_seed_table(tmp_path / "absent.toml")


@attrs.frozen(kw_only=True)
class Check(Step):
    type: ClassVar[str] = "check"
    criteria: list[dict[str, Any]] = attrs.field(factory=list)
    label: str = ""
    limit: int | str | None = None


def test_a_whole_placeholder_keeps_the_seed_type_where_the_field_allows_it():
    step = Check(
        id="c",
        criteria=[{"arguments": {"amount": "{amount}", "memo": "pay {amount}", "ok": "{flag}"}}],
        label="{amount}",
        limit="{amount}",
    )
    [out] = apply_seed([step], {"amount": 15000, "flag": False, "trial": 0, "seed": 0})
    assert out.criteria == [{"arguments": {"amount": 15000, "memo": "pay 15000", "ok": False}}]
    assert out.label == "15000" and out.limit == 15000
    cmd = Cmd(id="s", command="{amount}", env={"N": "{amount}"}, args=["{amount}"])
    [typed_as_text] = apply_seed([cmd], {"amount": 15000, "trial": 0, "seed": 0})
    assert typed_as_text.command == "15000"
    assert typed_as_text.env == {"N": "15000"} and typed_as_text.args == ["15000"]
