"""Env servers answer only the run's gateway: `deploy_env` gives each env a secret, the env's
server (the SDK) refuses every request without it (401) but the card and `/healthz`, and the
gateway adds it to what it forwards. A task opts out with `allow_direct_calls`. Real env
processes in local sandboxes, real HTTP on 127.0.0.1."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import ClassVar

import attrs
import httpx
import pytest

from agent_env import hookimpl
from agent_env.models import Step

sys.path.insert(0, str(Path(__file__).parent))
from compat_envs import FILES, deploy, validators  # noqa: E402
from test_env_access_and_snapshot import SEES, look  # noqa: E402

pytestmark = pytest.mark.anyio


@attrs.frozen(kw_only=True)
class ProbeDirect(Step):
    """Calls the deployed env's own URL directly (as anything on the host could), with and
    without the env's secret; records each answer's status under `outputs.<id>`."""

    type: ClassVar[str] = "t_probe_direct"
    env_id: str

    async def execute(self, ctx) -> None:
        from agentenv_core_steps.envs import secret as env_secret

        url = ctx.get("envs", self.env_id)["url"]
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        data = {"jsonrpc": "2.0", "id": 2, "method": "data/get", "params": {}}
        secret = env_secret.for_env(ctx, self.env_id)
        seen: dict = {"secret_given": secret is not None}
        async with httpx.AsyncClient(timeout=10, trust_env=False) as http:
            seen["card"] = (await http.get(url + "/.well-known/agent-env.json")).status_code
            seen["healthz"] = (await http.get(url + "/healthz")).status_code
            mcp = await http.post(
                url + "/mcp", json=listing, headers={"accept": "application/json"}
            )
            seen["mcp"] = mcp.status_code
            seen["mcp_body"] = mcp.json()
            seen["data"] = (await http.post(url + "/agentenv", json=data)).status_code
            seen["ext"] = (await http.post(url + "/agentenv/ext/anything", json={})).status_code
            wrong = {"agentenv-env-secret": "not-the-secret"}
            seen["wrong"] = (
                await http.post(url + "/agentenv", json=data, headers=wrong)
            ).status_code
            if secret:
                right = {"agentenv-env-secret": secret}
                seen["right"] = (
                    await http.post(url + "/agentenv", json=data, headers=right)
                ).status_code
        ctx.set("outputs", self.id, value=seen)


class _Probes:
    @hookimpl
    def agentenv_register_step_types(self, registry):
        registry.add(ProbeDirect)


@pytest.fixture(params=["local", "docker"])
def probing(request, runner):
    """The runner with the probe step, deploying on `local` or on Docker (the env's image built
    with this SDK; skipped without a daemon locally, failing on CI)."""
    plugins = runner.plugins
    extra = []
    if request.param == "docker":
        pytest.importorskip("agentenv_docker_sandbox")
        from agentenv_docker_sandbox.testing import require_docker

        require_docker()
        import agentenv_docker_sandbox.hooks

        extra.append(agentenv_docker_sandbox.hooks)

    def with_probe():
        manager = plugins()
        manager.register(_Probes(), "probes")
        for module in extra:
            manager.register(module, "docker-sandbox")
        return manager

    runner.plugins = with_probe
    runner.provider = request.param
    return runner


def deploy_on(runner, **fields) -> dict:
    step = {**deploy("tidy"), **fields}
    if runner.provider != "local":
        step["sandbox_type"] = runner.provider
    return step


def probe(step_id: str = "probe") -> dict:
    return {"id": step_id, "type": "t_probe_direct", "env_id": "tidy"}


async def test_direct_calls_are_refused_and_the_gateway_gets_through(probing):
    steps = [deploy_on(probing), probe(), look("through-gateway"), *validators("tidy")]
    record = await probing.run(steps, {**FILES, "artifacts/sees/sees.py": SEES})
    assert record["outcome"].startswith("passed"), (record["failure"], probing.logs.lines)
    seen = probing.state["outputs"]["probe"]
    assert seen["secret_given"] is True
    assert (seen["card"], seen["healthz"]) == (200, 200)  # open: what a deploy step polls
    assert (seen["mcp"], seen["data"], seen["ext"], seen["wrong"]) == (401, 401, 401, 401)
    assert seen["mcp_body"]["error"]["data"] == {"code": "unauthorized"}
    assert "answers only its gateway" in seen["mcp_body"]["error"]["message"]
    assert seen["right"] == 200
    # through the gateway the verifier lists and calls the env's tools
    rows = {
        r["id"]: r["description"] for r in probing.state["verifiers"]["through-gateway"]["results"]
    }
    assert rows == {"tools": "add_item,list_items", "call": "ok"}
    assert probing.state["envs"]["tidy"]["gateway_only"] is True
    # the secret is masked wherever the run recorded anything
    from agentenv_core_steps.envs.secret import derive

    secret = derive(probing.instance.id, "tidy", probing.home)
    assert secret not in str(record) and secret not in "\n".join(probing.logs.lines)
    assert oct((probing.home / "env-secret.key").stat().st_mode & 0o777) == "0o600"
    assert probing.state["envs"]["tidy"]["provider"] == probing.provider
    assert not probing.leftovers()


async def test_a_task_can_opt_out_and_let_direct_calls_in(probing):
    steps = [deploy_on(probing, allow_direct_calls=True), probe(), look("through-gateway")]
    record = await probing.run(steps, {**FILES, "artifacts/sees/sees.py": SEES})
    assert record["outcome"].startswith("passed"), (record["failure"], probing.logs.lines)
    seen = probing.state["outputs"]["probe"]
    assert seen["secret_given"] is False
    assert (seen["mcp"], seen["data"], seen["wrong"]) == (200, 200, 200)
    assert probing.state["envs"]["tidy"]["gateway_only"] is False


# -- the key secrets are derived from: one per home, however many make it at once ----------


def test_threads_making_the_key_at_once_all_derive_the_same_secrets(tmp_path):
    """openenv serves sessions from worker threads: on a fresh home, 16 sessions deploying
    at once each made the key, and one whose write landed in the linked file after another
    had read it derived secrets its gateway did not (a 401 seen on CI)."""
    import threading

    from agentenv_core_steps.envs import secret

    for round_ in range(10):
        home = tmp_path / f"home-{round_}"
        start, out = threading.Barrier(16), [None] * 16

        def one(i, home=home, start=start, out=out):
            start.wait()
            out[i] = secret.derive("ti-1", "notes", home)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        secret._KEYS.clear()  # what another process reads from the file
        assert set(out) == {secret.derive("ti-1", "notes", home)}
        assert sorted(p.name for p in home.iterdir()) == [secret.KEY_FILE]
        assert (home / secret.KEY_FILE).stat().st_mode & 0o777 == 0o600


def test_processes_making_the_key_at_once_all_derive_the_same_secret(tmp_path):
    import subprocess

    code = (
        "import sys; from pathlib import Path; from agentenv_core_steps.envs import secret; "
        "print(secret.derive('ti-1', 'notes', Path(sys.argv[1])))"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE)
        for _ in range(8)
    ]
    secrets_seen = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(secrets_seen) == 1 and all(p.returncode == 0 for p in procs)
