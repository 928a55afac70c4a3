"""Listing and showing stored entities moved from the kernel to `agentenv_stored_entities.catalog`:
`agent_env.cli.toolkit.list_entities` and `.show` still resolve (the same functions), and
without the package the error names what to install."""

from __future__ import annotations

import sys

import pytest

from agent_env.cli import toolkit
from agentenv_stored_entities import catalog


@pytest.mark.parametrize("name", ["list_entities", "show"])
def test_the_toolkit_names_resolve_from_the_plugin(name):
    assert getattr(toolkit, name) is getattr(catalog, name)


def test_without_the_package_the_error_names_the_install(monkeypatch):
    monkeypatch.delitem(vars(toolkit), "show", raising=False)
    monkeypatch.setitem(sys.modules, "agentenv_stored_entities.catalog", None)
    with pytest.raises(AttributeError) as caught:
        toolkit.show  # noqa: B018
    assert str(caught.value) == (
        "agent_env.cli.toolkit.show comes with agentenv-stored-entities; install it with: "
        "pip install agentenv-stored-entities"
    )


def test_a_kernel_module_that_fails_to_import_is_not_called_missing(monkeypatch):
    monkeypatch.delitem(vars(toolkit), "get_version", raising=False)
    monkeypatch.setitem(sys.modules, "agent_env.entities.catalog", None)
    with pytest.raises(ModuleNotFoundError):
        toolkit.get_version  # noqa: B018
