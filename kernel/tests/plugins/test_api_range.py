"""The plugin-API range check answers release-number ranges without `packaging`, and its
answer is the one `packaging` gives."""

from __future__ import annotations

import subprocess
import sys

import pytest
from packaging.specifiers import SpecifierSet

from agent_env.plugins.api import _release_range, api_problem

RANGES = [">=1.0,<2", ">=1", "<1", "==1", "==1.0.0", "!=1.0", ">1.0", "<=1.0", ">= 0.9 , < 1.1"]
VERSIONS = ["1.0", "1", "1.0.1", "0.9", "2.0", "1.1"]


@pytest.mark.parametrize("declared", RANGES)
@pytest.mark.parametrize("version", VERSIONS)
def test_release_ranges_agree_with_packaging(declared, version):
    assert _release_range(declared, version) is (version in SpecifierSet(declared))


@pytest.mark.parametrize("declared", ["~=1.0", "==1.*", ">=1.0rc1", "===1.0"])
def test_other_ranges_go_to_packaging(declared):
    assert _release_range(declared, "1.0") is None
    assert (api_problem(declared, "1.0") is None) is ("1.0" in SpecifierSet(declared))


def test_checking_an_ordinary_range_imports_no_packaging():
    code = (
        "import sys; from agent_env.plugins.api import api_problem; "
        "assert api_problem('>=1.0,<2') is None; print('packaging' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
