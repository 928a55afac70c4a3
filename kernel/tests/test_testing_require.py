import pytest

from agent_env.testing.require import require


def test_no_problem_does_nothing():
    require(None)


def test_a_problem_skips_locally(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no daemon"):
        require("no daemon")


def test_a_problem_fails_on_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true and no daemon"):
        require("no daemon")
