"""`agent_env.plugins.known.KNOWN_BACKENDS` is built on first use (wording an install command
looks at the installation's files), and is the same table as before: one install command per
in-tree store or sandbox backend."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agent_env.plugins import known


def test_the_table_names_the_install_of_every_in_tree_backend():
    table = known.KNOWN_BACKENDS
    expected = {
        key: known.install_command(dist)
        for key, dist in known.KNOWN.items()
        if key[0] in known.BACKEND_KINDS
    }
    assert table == expected
    assert ("object", "s3") in table and "agentenv" in table[("object", "s3")]
    assert known.KNOWN_BACKENDS is table  # built once


def test_an_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="KNOWN_BACKEND"):
        known.KNOWN_BACKEND  # noqa: B018
    with pytest.raises(ImportError):
        from agent_env.plugins.known import NOT_THERE  # noqa: F401


def test_importing_the_module_words_no_install_command():
    code = (
        "import sys\n"
        "import agent_env.plugins.known as k\n"
        "print('KNOWN_BACKENDS' in vars(k), 'agent_env.plugins.installer' in sys.modules)\n"
        "from agent_env.plugins.known import KNOWN_BACKENDS\n"
        "print('KNOWN_BACKENDS' in vars(k), 'agent_env.plugins.installer' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    assert out == ["False", "False", "True", "True"]
