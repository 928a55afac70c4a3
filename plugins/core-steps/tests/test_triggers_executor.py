"""Natural-language actions on the real gateway: the trigger engine asks a real A2A agent (the
executor), but only within its working hours, deferring in virtual time until they open."""

from __future__ import annotations

from datetime import datetime

import httpx
import pytest

from agentenv_protocol.agent.server import A2AAgent, create_app
from agentenv_protocol.agent.types import AgentResult
from agentenv_protocol.gateway import Gateway, serve_gateway
from agentenv_protocol.gateway.triggers.engine import wait_for
from agentenv_protocol.serving import serve_in_thread


class Executor(A2AAgent):
    """Notes the virtual time each instruction arrives at (read from the gateway's clock)."""

    name = "executor"

    def __init__(self, clock) -> None:
        super().__init__()
        self.clock = clock
        self.seen: list[tuple[str, str, datetime]] = []

    async def run(self, request):
        self.seen.append((request.text, request.context_id, self.clock.now()))
        return AgentResult(text="replied to the customer")


@pytest.fixture
def served():
    gateway = Gateway({})
    server = serve_gateway(gateway)
    agent = Executor(gateway.clock)
    running = serve_in_thread(create_app(agent), host="127.0.0.1", port=0)
    try:
        yield gateway, server, agent, running.url
    finally:
        running.stop()
        server.stop()


def post(server, gateway, path: str, body: dict) -> httpx.Response:
    headers = {"authorization": f"Bearer {gateway.admin_token}"}
    return httpx.request(
        "PUT" if path.endswith("set-time") else "POST",
        server.url + path,
        json=body,
        headers=headers,
        timeout=30,
    )


@pytest.mark.parametrize(
    "zone, opens",
    [
        ({"time_zone": "America/New_York"}, "2026-03-09T13:00:00Z"),
        ({"utc_offset": "-05:00"}, "2026-03-09T14:00:00Z"),
    ],
)
def test_an_nl_action_waits_for_the_executors_local_hours(served, zone, opens):
    gateway, server, agent, agent_url = served
    hours = {"start": "09:00", "end": "17:00", "days": ["mon", "tue", "wed", "thu", "fri"], **zone}
    trigger = {
        "id": "answer",
        "when": {"type": "time", "at": "PT1M"},
        "actions": [{"type": "nl", "instruction": "Reply to the customer's email."}],
    }
    armed = post(
        server,
        gateway,
        "/clock/set-time",
        {"virtual_time": "2026-03-08T06:59:00Z", "virtual_seconds_per_real_second": 86400},
    )
    assert armed.status_code == 200, armed.text
    body = {
        "triggers": [trigger],
        "executor": {"a2a_url": agent_url, "role": "executor", "hours": hours},
    }
    answer = post(server, gateway, "/triggers/register", body)
    assert answer.json() == {"ok": True, "added": ["answer"], "all": ["answer"]}
    state = wait_for(
        gateway.triggers, lambda s: s["triggers"][0]["status"] in ("fired", "failed"), 20
    )
    assert state["triggers"][0]["status"] == "fired", state["events"]
    kinds = [e["kind"] for e in state["events"]]
    assert kinds == ["added", "anchored", "detected", "deferred", "action_ok", "fired"]
    deferred = next(e for e in state["events"] if e["kind"] == "deferred")
    assert deferred["until"] == opens
    ((text, context, at),) = agent.seen
    assert text == "Reply to the customer's email." and context == "trigger-answer"
    assert at >= datetime.fromisoformat(opens.replace("Z", "+00:00"))
    assert state["config"]["executor_configured"] is True


def test_bad_registrations_are_400s_that_change_nothing(served):
    gateway, server, _agent, _url = served
    cases = [
        ({"triggers": [{"id": "x", "when": {"type": "time"}, "actions": []}]}, "needs when.at"),
        (
            {
                "triggers": [
                    {
                        "id": "x",
                        "when": {"type": "time", "at": "PT1H"},
                        "actions": [{"type": "nl", "instruction": "hi ${args.x}"}],
                    }
                ]
            },
            "never templated",
        ),
        (
            {
                "triggers": [
                    {
                        "id": "x",
                        "when": {"type": "time", "at": "PT1H"},
                        "actions": [{"type": "nl", "instruction": "hi"}],
                    }
                ]
            },
            "needs an executor",
        ),
        (
            {"triggers": [{"id": "x", "when": {"type": "tiem"}, "actions": []}]},
            "did you mean 'time'",
        ),
    ]
    for body, words in cases:
        answer = post(server, gateway, "/triggers/register", body)
        assert answer.status_code == 400 and words in answer.json()["error"], answer.text
    assert gateway.triggers.state()["triggers"] == []
    same = {
        "id": "t",
        "when": {"type": "time", "at": "PT1H"},
        "actions": [{"type": "permission", "action": "disable", "role": "agent", "tools": "*"}],
    }
    assert post(server, gateway, "/triggers/register", {"triggers": [same]}).json()["added"] == [
        "t"
    ]
    again = post(server, gateway, "/triggers/register", {"triggers": [same]})
    assert again.json()["added"] == ["t"]  # idempotent by id
    changed = {**same, "when": {"type": "time", "at": "PT2H"}}
    clash = post(server, gateway, "/triggers/register", {"triggers": [changed]})
    assert clash.status_code == 400 and "different spec" in clash.json()["error"]
    agent = gateway.issue_token("agent")
    refused = httpx.get(
        server.url + "/triggers/state", headers={"authorization": f"Bearer {agent}"}
    )
    assert refused.status_code == 403
    card = httpx.get(
        server.url + "/.well-known/agent-env.json",
        headers={"authorization": f"Bearer {gateway.admin_token}"},
    ).json()
    (clock,) = [e for e in card["capabilities"]["extensions"] if e["uri"].endswith("clock/v1")]
    assert sorted(clock["params"]["methods"]) == ["clear", "get_time", "set_time", "state"]


class FailingExecutor(A2AAgent):
    """Fails every instruction the way an agent-env agent does: no text, a failure data part."""

    name = "failing-executor"

    async def run(self, request):
        return AgentResult(text="", failure=("agent", "the CRM refused the login"))


def test_an_executor_that_fails_says_why():
    gateway = Gateway({})
    server = serve_gateway(gateway)
    running = serve_in_thread(create_app(FailingExecutor()), host="127.0.0.1", port=0)
    try:
        post(
            server,
            gateway,
            "/clock/set-time",
            {"virtual_time": "2026-03-09T14:00:00Z", "virtual_seconds_per_real_second": 86400},
        )
        trigger = {
            "id": "answer",
            "when": {"type": "time", "at": "PT1M"},
            "actions": [{"type": "nl", "instruction": "Reply to the customer's email."}],
        }
        body = {"triggers": [trigger], "executor": {"a2a_url": running.url, "role": "executor"}}
        assert post(server, gateway, "/triggers/register", body).status_code == 200
        state = wait_for(
            gateway.triggers, lambda s: s["triggers"][0]["status"] in ("fired", "failed"), 20
        )
    finally:
        running.stop()
        server.stop()
    (failed,) = [e for e in state["events"] if e["kind"] == "action_failed"]
    error = failed["detail"]["error"]
    assert "executor task ended 'failed'" in error
    assert "agent error: the CRM refused the login" in error, error
