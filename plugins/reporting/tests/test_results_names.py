"""The grouped counts moved from the kernel's `agent_env.results` to agentenv-reporting: the
names users import from `agent_env.results` still resolve (the same functions), and without
the package the error says what to install instead of a bare AttributeError."""

from __future__ import annotations

import sys

import pytest

from agent_env import results
from agent_env.plugins.known import install_command
from agentenv_reporting import grouped

MOVED = ("run_groups", "run_counts", "run_results", "verifier_rates", "COUNTED", "Groups")


@pytest.mark.parametrize("name", MOVED)
def test_moved_names_resolve_from_the_kernel_module(name):
    assert getattr(results, name) is getattr(grouped, name)


def test_without_the_package_the_error_names_the_install(monkeypatch):
    monkeypatch.delitem(vars(results), "run_counts", raising=False)
    monkeypatch.setitem(sys.modules, "agentenv_reporting.grouped", None)
    with pytest.raises(AttributeError) as caught:
        results.run_counts  # noqa: B018
    assert str(caught.value) == (
        "agent_env.results.run_counts comes with agentenv-reporting (agentenv_reporting.grouped); "
        f"install it with: {install_command('agentenv-reporting')}"
    )
    assert "agentenv-reporting" in install_command("agentenv-reporting")


def test_an_unknown_name_is_a_plain_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'run_count'"):
        results.run_count  # noqa: B018
