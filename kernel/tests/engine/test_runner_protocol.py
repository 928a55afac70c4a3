"""The `Runner` contract: what a distributed runner plugin implements."""

from agent_env import Runner
from agent_env.engine.runner import LocalRunner


def test_local_runner_satisfies_the_runner_protocol():
    assert isinstance(LocalRunner(concurrency=2), Runner)


def test_an_object_without_run_is_not_a_runner():
    class NotARunner:
        type = "nope"

    assert not isinstance(NotARunner(), Runner)
