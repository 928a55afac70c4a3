"""`plugin add|remove` refuses the throwaway environment uvx runs in, and counts what a staying
distribution requires as a use of the one removed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentenv_plugin_lifecycle.environment import Refused, detect


def test_plugin_changes_are_refused_under_uvx(tmp_path):
    uvx = tmp_path / "uvcache" / "archive-v0" / "u2e1C9IZqmg8NVqV"
    (uvx / "bin").mkdir(parents=True)
    with pytest.raises(Refused, match="throwaway environment of uv's cache") as err:
        detect(python=uvx / "bin" / "python", prefix=uvx, base_prefix=Path(sys.base_prefix))
    assert "uv tool install agentenv-framework --with SPEC" in str(err.value)


def test_removing_what_a_staying_distribution_requires_counts_as_a_use():
    """Seen in this environment: the meta-distribution requires hf-hub, but aws only as an
    extra, so removing hf-hub would break `pip check` and removing aws-stores would not."""
    from agentenv_plugin_lifecycle.remove import requirers
    from agentenv_plugin_lifecycle.snapshot import take

    snapshot = take(Path(sys.executable))
    [use] = requirers(snapshot, {"agentenv-hf-hub"})
    assert use.startswith("agentenv-framework 1.0.0 requires agentenv-hf-hub (`pip check`")
    assert requirers(snapshot, {"agentenv-aws-stores"}) == []
