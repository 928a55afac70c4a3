"""`agent_env.testing` stays cheap and keeps the earlier names: importing it loads neither the
kits nor pytest nor the engine; `agent_env.testing.StepTypeContract` (and a fixture) resolve
from agentenv-testing on first use; without the package the error names what to install."""

from __future__ import annotations

import subprocess
import sys


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_importing_the_seam_imports_no_kit_no_pytest_and_no_engine():
    done = python(
        "import sys, agent_env.testing, agent_env.testing.require\n"
        "heavy = [m for m in ('agentenv_testing', 'pytest', 'agent_env.engine', "
        "'agent_env.runs.pipeline') if m in sys.modules]\n"
        "print(heavy)"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_earlier_names_resolve_from_the_kit():
    done = python(
        "import agent_env.testing as t, agentenv_testing, agentenv_testing.contracts as c\n"
        "assert t.StepTypeContract is c.StepTypeContract\n"
        "assert t.DocumentStoreContract is c.DocumentStoreContract\n"
        "assert t.plugin_manager is agentenv_testing.plugin_manager\n"
        "print('ok')"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_an_unknown_name_is_an_attribute_error():
    done = python(
        "import agent_env.testing as t\n"
        "try:\n    t.NoSuchContract\nexcept AttributeError as exc:\n    print(exc)"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "module 'agent_env.testing' has no attribute 'NoSuchContract'"


def test_without_the_kit_the_error_names_the_package():
    done = python(
        "import sys\nsys.modules['agentenv_testing'] = None  # as if not installed\n"
        "import agent_env.testing as t\n"
        "try:\n    t.StepTypeContract\nexcept AttributeError as exc:\n    print(exc)"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "agent_env.testing.StepTypeContract moved to the agentenv-testing package (import it "
        "from agentenv_testing); install it with: pip install agentenv-testing"
    )
