"""Test markers, set from what a test uses so that test files rarely need to say it.

A test is marked `docker` when its fixtures include a Docker one (`DOCKER_FIXTURES`) or it is
the `docker` case of a parametrized test; an explicit `@pytest.mark.docker` covers a test that
asks for the daemon in its body. `browser`, `network` and `slow` are set where they apply (by
module or test). CONTRIBUTING.md lists the markers and the inner loop that leaves them out.
"""

from __future__ import annotations

import pytest

#: A test whose fixture closure holds one of these uses a Docker daemon (podman's stands in).
DOCKER_FIXTURES = frozenset({"docker_client", "docker_runner", "base_image", "podman"})
#: Fixtures that start something that takes seconds (a Ray head, the Firestore emulator).
SLOW_FIXTURES = frozenset({"ray_head", "firestore_endpoint"})


def _parametrized_on_docker(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "docker" in callspec.params.values()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & DOCKER_FIXTURES or _parametrized_on_docker(item):
            item.add_marker(pytest.mark.docker)
        if names & SLOW_FIXTURES:
            item.add_marker(pytest.mark.slow)
