"""The run service is what `agent-env run`, `run --resume` and later front ends share: it must
import without click, and its options are one frozen value."""

from __future__ import annotations

import subprocess
import sys

import attrs
import pytest

from agent_env.engine.records import DECIDED, FINISHED, Status
from agent_env.runs.options import RunOptions


def test_service_imports_without_click():
    code = (
        "import sys, agent_env.runs.service, agent_env.runs.options; "
        "sys.exit('click' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_run_options_are_frozen_and_keyword_only():
    options = RunOptions(spec="b", trials=3, agent="oracle")
    assert options.many and options.agent == "oracle"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        options.trials = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        RunOptions("b")  # type: ignore[misc]
    assert attrs.evolve(options, trials=1).many is False


def test_statuses_are_the_stored_strings():
    assert [s.value for s in Status] == [
        "pending",
        "running",
        "passed",
        "scored_below",
        "unscored",
        "failed",
        "cancelled",
    ]
    assert "failed" in FINISHED and "failed" not in DECIDED
    assert "cancelled" not in FINISHED
