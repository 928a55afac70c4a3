"""The contract suites themselves: they must fail a backend that breaks the contract.

Each case writes a small test module that subclasses a suite with a deliberately broken
backend and runs pytest on it in a subprocess.
"""

import subprocess
import sys
import textwrap

import pytest

from agent_env.errors import StoreError
from agent_env.stores.base import ImageStore
from agentenv_testing.contracts import ImageStoreContract

BROKEN = {
    "racy_create": (
        "DocumentStoreContract",
        """
        async def create(self, collection, key, doc):
            if await self.get(collection, key) is not None:
                return False
            await anyio.sleep(0.01)
            await self.put(collection, key, doc)
            return True
        """,
        "concurrent_create_in_tasks",
    ),
    "prefix_as_pattern": (
        "DocumentStoreContract",
        """
        async def list(self, collection, prefix=""):
            rows = await super().list(collection)
            import fnmatch
            pattern = prefix.replace("%", "*").replace("_", "?") + "*"
            return [(k, d) for k, d in rows if fnmatch.fnmatchcase(k, pattern)]
        """,
        "prefix_is_literal",
    ),
    "lost_versions": (
        "VersionedEntitiesContract",
        """
        async def create(self, collection, key, doc):
            await anyio.sleep(0.001)
            await self.put(collection, key, doc)
            return True
        """,
        "concurrent_writers_in_tasks",
    ),
}

TEMPLATE = """
import functools
import anyio
import pytest
from agent_env.stores.sqlite import SqliteDocumentStore
from agentenv_testing.contracts import {suite}


class Broken(SqliteDocumentStore):
{body}

class TestBroken({suite}):
    @pytest.fixture
    def store_factory(self, tmp_path):
        return functools.partial(Broken, home=tmp_path)
"""


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_suite_catches_a_broken_backend(tmp_path, case):
    suite, body, test_name = BROKEN[case]
    module = tmp_path / f"test_{case}.py"
    module.write_text(
        TEMPLATE.format(suite=suite, body=textwrap.indent(textwrap.dedent(body), "    "))
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(module),
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            test_name,
            "--rootdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"FAILED test_{case}.py::TestBroken::test_{test_name}" in proc.stdout


class ToyImages(ImageStore):
    """A dict-backed image store that keeps the contract: only to run the image suite here."""

    type = "toy"
    local = {"toy/base:1"}

    def __init__(self):
        super().__init__({})
        self.stored: dict[str, str] = {}

    async def push(self, local_ref, name):
        if local_ref not in self.local:
            raise StoreError(f"no local image {local_ref!r}")
        self.stored[f"toy.registry/{name}"] = local_ref
        return f"toy.registry/{name}"

    async def pull(self, ref):
        if ref not in self.stored:
            raise KeyError(ref)
        return self.stored[ref]

    async def exists(self, ref):
        return ref in self.stored

    async def list(self, prefix=""):
        return sorted(r for r in self.stored if r.startswith(prefix))


class TestImageContractRunsOnAToyStore(ImageStoreContract):
    @pytest.fixture
    def store_factory(self):
        return ToyImages

    @pytest.fixture
    def local_image(self):
        return "toy/base:1"
