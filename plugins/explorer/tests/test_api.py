"""The explorer's JSON API over real recorded runs (hello, notes-agent with its oracle): runs
with counts, a run's statistics and paged trials, a trial's trajectory, tool calls, verifier
rows and logs, the stored entities with versions and lineage, starting and cancelling runs."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from urllib.parse import quote

import pytest


def test_runs_list_newest_first_with_counts_and_paging(client, project) -> None:
    page = client.get("/api/v1/runs").json()
    ids = [r["id"] for r in page["items"]]
    assert ids.index(project.runs["notes"]) < ids.index(project.runs["hello"])
    notes = next(r for r in page["items"] if r["id"] == project.runs["notes"])
    assert notes["bundle"] == "notes-agent" and notes["agent"] == "oracle"
    assert notes["counts"]["passed"] == 1 and notes["counts"]["pass_rate"] == 1.0
    first = client.get("/api/v1/runs?limit=1").json()
    assert len(first["items"]) == 1 and first["has_more"] and first["total"] >= 2
    only_hello = client.get("/api/v1/runs?bundle=hello").json()["items"]
    assert {r["bundle"] for r in only_hello} == {"hello"}


def test_a_run_has_statistics_and_its_trials(client, project) -> None:
    run = client.get(f"/api/v1/runs/{project.runs['notes']}").json()
    [task] = run["results"]["tasks"]
    assert task["name"] == "groceries" and task["passed"] == 1
    assert task["pass_at_k"] == {"1": 1.0} and task["pass_rate_ci95"][1] == 1.0
    assert sum(b["trials"] for b in run["results"]["score_histogram"]) == 1
    assert run["results"]["score_histogram"][-1]["trials"] == 1
    trials = client.get(f"/api/v1/runs/{project.runs['notes']}/trials").json()
    assert [t["id"] for t in trials["items"]] == [project.trials["notes"]]
    assert trials["items"][0]["status"] == "passed"
    none = client.get(f"/api/v1/runs/{project.runs['notes']}/trials?status=failed").json()
    assert none["items"] == [] and none["total"] == 0


def test_a_run_has_per_verifier_pass_rates_worst_first(client, project) -> None:
    """Across the two scored trials of `checks`: strict passes none, word one, ready both."""
    results = client.get(f"/api/v1/runs/{project.runs['checks']}").json()["results"]
    rates = [(v["verifier"], v["trials"], v["passed"]) for v in results["verifiers"]]
    assert rates == [("strict", 2, 0), ("word", 2, 1), ("ready", 2, 2)]
    word = results["verifiers"][1]
    assert word["pass_rate"] == 0.5 and word["mean_score"] == 0.5
    assert 0 < word["pass_rate_ci95"][0] < 0.5 < word["pass_rate_ci95"][1] < 1
    # trial scores 1/3 and 2/3; the broken trials failed in a verifier step (a sandbox it
    # names does not exist): class verifier_error, left out of the agent's statistics
    assert [b["trials"] for b in results["score_histogram"]] == [0, 0, 0, 1, 0, 0, 1, 0, 0, 0]


def test_runs_name_their_front_end_and_runner(client, project) -> None:
    items = client.get("/api/v1/runs").json()["items"]
    checks = next(r for r in items if r["id"] == project.runs["checks"])
    assert (checks["front_end"], checks["runner"]) == ("run", "local")
    run = client.get(f"/api/v1/runs/{project.runs['checks']}").json()
    assert (run["front_end"], run["runner"]) == ("run", "local")


def test_compare_two_runs(client, project) -> None:
    a, b = project.runs["fruit-a"], project.runs["fruit-b"]
    data = client.get(f"/api/v1/compare?a={a}&b={b}").json()
    assert (data["a"]["id"], data["b"]["id"]) == (a, b)
    [pick] = data["tasks"]
    assert (pick["a"]["passed"], pick["b"]["passed"], pick["a"]["trials"]) == (1, 2, 3)
    assert pick["delta"] == 0.333333 and pick["delta_ci95"][0] < 0 < pick["delta_ci95"][1]
    assert [(v["verifier"], v["delta"]) for v in data["verifiers"]] == [
        ("word", 0.333333),
        ("ready", 0.0),
    ]
    assert [f["trial"] for f in data["flipped"]["fixed"]] == [0, 2]
    assert [f["trial"] for f in data["flipped"]["broken"]] == [1]
    cost_a, cost_b = data["cost"]["a"], data["cost"]["b"]
    assert (cost_a["summed"], cost_a["trials"], cost_b["trials"]) == (True, 3, 3)
    assert cost_a["total_tokens"] == 0 and set(cost_a["sandbox_seconds"]) == {"local"}


def test_compare_gives_each_runs_cost(client, project) -> None:
    a, b = project.runs["notes"], project.runs["graded"]
    cost = client.get(f"/api/v1/compare?a={a}&b={b}").json()["cost"]
    assert (cost["a"]["total_tokens"], cost["b"]["total_tokens"]) == (0, 54)
    assert cost["b"]["usd"] == pytest.approx(0.75)


@pytest.mark.parametrize(
    ("query", "status", "words"),
    [
        ("a=run-x", 400, "a and b: required"),
        ("a=run-x&b=run-y", 404, "no run 'run-x'"),
        ("a=run-x&bb=run-y", 400, "unknown query parameter 'bb'"),
    ],
)
def test_compare_names_what_is_missing(client, query, status, words) -> None:
    answer = client.get(f"/api/v1/compare?{query}")
    assert answer.status_code == status and words in answer.json()["detail"]


def test_a_finished_runs_events_give_its_counts_then_end(client, project) -> None:
    answer = client.get(f"/api/v1/runs/{project.runs['checks']}/events")
    assert answer.headers["content-type"].startswith("text/event-stream")
    events = [e for e in answer.text.split("\n\n") if e.startswith("event:")]
    assert [e.splitlines()[0] for e in events] == ["event: counts", "event: end"]
    counts = json.loads(events[0].splitlines()[1].removeprefix("data: "))
    assert counts["counts"]["failed"] == 4 and counts["process_running"] is False
    run = client.get(f"/api/v1/runs/{project.runs['checks']}").json()
    assert run["live"] is False and run["counts"] == counts["counts"]
    assert client.get("/api/v1/runs/run-nope/events").status_code == 404


def test_an_env_deploy_run_is_listed_with_its_front_end(client, project) -> None:
    """`agent-env env deploy` records a run through the run service like `agent-env run`: the
    explorer lists it among the runs, named as an `env deploy` run on the local runner."""
    import signal
    import subprocess

    held = subprocess.Popen(
        [project.agent_env, "env", "deploy", "--id", "notes", "--json"],
        cwd=project.root,
        env=project.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        shown = ""
        while not shown.rstrip().endswith("}") and held.poll() is None:
            shown += held.stdout.readline()
        run_id = json.loads(shown)["run_id"]
    finally:
        held.send_signal(signal.SIGINT)
        _, err = held.communicate(timeout=120)
    assert held.returncode == 0, err
    items = client.get("/api/v1/runs").json()["items"]
    [deployed] = [r for r in items if r["id"] == run_id]
    assert (deployed["front_end"], deployed["runner"]) == ("env deploy", "local")
    assert deployed["bundle"] == "notes-agent" and deployed["counts"]["trials"] == 1
    run = client.get(f"/api/v1/runs/{run_id}").json()
    assert run["front_end"] == "env deploy" and run["results"]["tasks"]


def test_a_trial_has_its_seed_values(client, project) -> None:
    trials = project.recorded["checks"]["tasks"]
    by_seed = {}
    for trial in trials:
        record = client.get(f"/api/v1/trials/{trial['id']}").json()["record"]
        by_seed[(record["task"]["name"], record["trial"])] = record["seed_values"]
    assert by_seed[("mixed", 1)] == {"trial": 1, "seed": 8, "word": "banana"}
    assert by_seed[("broken", 0)] == {"trial": 0, "seed": 7, "word": "kiwi"}


def test_a_trial_shows_steps_tool_calls_verifiers_and_logs(client, project) -> None:
    data = client.get(f"/api/v1/trials/{project.trials['notes']}").json()
    assert list(data["record"]["steps"]) == ["env", "agent", "ask", "state", "answer", "calls"]
    calls = data["trajectories"]["ask"]["gateway_calls"]
    assert [c["tool"] for c in calls] == ["list_notes", "add_note"]
    assert calls[1]["arguments"]["title"] == "groceries" and calls[1]["role"]
    assert all(isinstance(c["duration_ms"], float) for c in calls)
    rows = [r for v in data["record"]["verifiers"].values() for r in v["results"]]
    assert rows and all(r["result"] for r in rows)
    assert "serving 'notes'" in data["logs"]["env_notes"]


def test_entities_list_versions_and_lineage(client, project) -> None:
    tasks = client.get("/api/v1/tasks").json()
    groceries = next(e for e in tasks["items"] if e["name"] == "groceries")
    assert groceries["version"] == 1
    path = quote(groceries["id"], safe="")
    versions = client.get(f"/api/v1/tasks/{path}/versions").json()
    assert versions[0]["version"] == 1
    assert project.runs["notes"] in versions[0]["runs"]
    entity = client.get(f"/api/v1/tasks/{path}?version=1").json()
    assert entity["content"]["name"] == "groceries"
    envs = client.get("/api/v1/envs?id=notes").json()["items"]
    assert [e["name"] for e in envs] == ["notes"]


@pytest.mark.parametrize(
    ("url", "status", "words"),
    [
        ("/api/v1/runs?limit=0", 400, "limit"),
        ("/api/v1/runs?limt=5", 400, "did you mean 'limit'"),
        ("/api/v1/runs/run-nope", 404, "no run 'run-nope'"),
        ("/api/v1/runs/run-nope/trials", 404, "no run 'run-nope'"),
        ("/api/v1/trials/ti-nope", 404, "no trial"),
        ("/api/v1/taks", 404, "did you mean 'tasks'"),
        ("/api/v1/tasks/%40local%2Fnope/versions", 404, "no task"),
    ],
)
def test_bad_requests_name_the_problem(client, url, status, words) -> None:
    answer = client.get(url)
    assert answer.status_code == status
    assert words in answer.json()["detail"]


def test_bad_status_filter_suggests_a_status(client, project) -> None:
    answer = client.get(f"/api/v1/runs/{project.runs['hello']}/trials?status=pased")
    assert answer.status_code == 400
    assert "did you mean 'passed'" in answer.json()["detail"]


def _wait_finished(client, run_id: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = client.get(f"/api/v1/runs/{run_id}").json()
        if not run["process_running"]:
            return run
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not finish")


def test_start_a_run_and_watch_it_finish(client, project) -> None:
    answer = client.post("/api/v1/runs", json={"spec": "hello"})
    assert answer.status_code == 202, answer.text
    run_id = answer.json()["run_id"]
    run = _wait_finished(client, run_id)
    assert run["started_here"] and run["counts"]["passed"] == 1
    assert client.get(f"/api/v1/runs/{run_id}/log").status_code == 200
    assert client.post(f"/api/v1/runs/{run_id}/cancel").json() == {
        "run_id": run_id,
        "cancelled": False,
    }


def test_cancel_a_running_run(client, project) -> None:
    """The run runs in the explorer's process (its record's owner), and a cancel from the API
    records its trial as cancelled and tears its sandbox (the sleeping process) down."""
    answer = client.post("/api/v1/runs", json={"spec": "slow"})
    assert answer.status_code == 202, answer.text
    run_id = answer.json()["run_id"]
    deadline = time.monotonic() + 60
    while client.get(f"/api/v1/runs/{run_id}").json()["counts"]["running"] == 0:
        assert time.monotonic() < deadline, "the slow trial never started"
        time.sleep(0.1)
    run = client.get(f"/api/v1/runs/{run_id}").json()
    assert run["run"]["owner"]["pid"] == os.getpid()  # in process, not an `agent-env run` child
    assert json.loads(project.cli("sandbox", "list", "--json").stdout)  # its lease
    assert _sleepers() == 1
    t0 = time.monotonic()
    assert client.post(f"/api/v1/runs/{run_id}/cancel").json()["cancelled"] is True
    run = _wait_finished(client, run_id, timeout=60)
    assert time.monotonic() - t0 < 30
    assert run["counts"]["cancelled"] == 1 and run["counts"]["running"] == 0
    assert not run["process_running"]
    [trial] = client.get(f"/api/v1/runs/{run_id}/trials").json()["items"]
    assert trial["status"] == "cancelled"
    assert json.loads(project.cli("sandbox", "list", "--json").stdout) == []
    assert _sleepers() == 0
    assert "cancelled; sandboxes torn down" in client.get(f"/api/v1/runs/{run_id}/log").text


def _sleepers() -> int:
    """How many `sleep 1717` processes (the slow task's) are alive."""
    found = 0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            found += (proc / "cmdline").read_bytes() == b"sleep\x001717\x00"
        except OSError:
            pass
    return found


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"spek": "hello"}, 400, "did you mean 'spec'"),
        ({}, 400, "spec: required"),
        ({"spec": "hello", "trials": 0}, 400, "trials"),
        ({"spec": "no-such-bundle"}, 422, "neither a folder nor an installed bundle"),
        ({"spec": "hello", "agent": "orcale"}, 422, "no agent 'orcale' (did you mean 'oracle'"),
    ],
)
def test_bad_run_requests_start_nothing(client, body, status, words) -> None:
    before = client.get("/api/v1/runs").json()["total"]
    answer = client.post("/api/v1/runs", json=body)
    assert answer.status_code == status, answer.text
    assert words in answer.json()["detail"]
    assert client.get("/api/v1/runs").json()["total"] == before


def test_cancelling_a_run_started_elsewhere_is_refused(client, project) -> None:
    answer = client.post(f"/api/v1/runs/{project.runs['hello']}/cancel")
    assert answer.status_code == 409
    assert "not started by this explorer" in answer.json()["detail"]


def test_a_finished_runs_page_is_kept_until_the_store_changes(client, project) -> None:
    import anyio

    from agent_env.stores.sqlite import SqliteDocumentStore

    run_id = project.runs["hello"]
    first = client.get(f"/api/v1/runs/{run_id}").json()
    assert client.get(f"/api/v1/runs/{run_id}").json() == first  # kept: same answer

    async def rewrite(change: dict) -> dict:
        other = SqliteDocumentStore(home=project.home)  # another connection, as another process
        try:
            doc = await other.get("runs", run_id)
            await other.put("runs", run_id, {**doc, **change})
            return doc
        finally:
            await other.close()

    original = anyio.run(rewrite, {"meta": {"agent": "someone-else"}})
    try:
        changed = client.get(f"/api/v1/runs/{run_id}").json()
        assert changed["agent"] == "someone-else"  # the write is seen: nothing stale is served
    finally:
        anyio.run(rewrite, original)
    assert client.get(f"/api/v1/runs/{run_id}").json()["agent"] == first["agent"]


def test_a_trial_has_its_cost_and_per_call_rewards(client, project) -> None:
    """The graded trial: three model calls of 11 + 7 tokens at $10,000 / $20,000 per 1M tokens,
    two gateway calls scored 0.25 (list_notes, the default) and 1 (add_note, the rule)."""
    data = client.get(f"/api/v1/trials/{project.trials['graded']}").json()
    cost = data["record"]["cost"]
    assert (cost["prompt_tokens"], cost["completion_tokens"], cost["total_tokens"]) == (33, 21, 54)
    assert cost["models"] == {
        "scripted-1": {"prompt_tokens": 33, "completion_tokens": 21, "total_tokens": 54}
    }
    assert cost["usd"] == pytest.approx(0.75) and set(cost["sandbox_seconds"]) == {"local"}
    calls = data["trajectories"]["ask"]["gateway_calls"]
    assert [c["tool"] for c in calls] == ["list_notes", "add_note"]
    assert data["record"]["step_rewards"] == [
        {"call_index": 0, "score": 0.25, "verifier": "per-call"},
        {"call_index": 1, "score": 1.0, "verifier": "per-call"},
    ]


def test_a_run_adds_up_its_trials_costs(client, project) -> None:
    cost = client.get(f"/api/v1/runs/{project.runs['graded']}").json()["cost"]
    assert cost["summed"] and (cost["records"], cost["trials"]) == (1, 1)
    assert (cost["prompt_tokens"], cost["completion_tokens"], cost["total_tokens"]) == (33, 21, 54)
    assert cost["usd"] == pytest.approx(0.75) and cost["wall_seconds"] > 0
    checks = client.get(f"/api/v1/runs/{project.runs['checks']}").json()["cost"]
    assert checks["trials"] == 4 and checks["total_tokens"] == 0 and checks["usd"] == 0


def test_a_big_runs_page_says_its_costs_are_not_added_up(client, project, monkeypatch) -> None:
    from agentenv_explorer import api_runs

    monkeypatch.setattr(api_runs, "COST_SUMMED_UP_TO", 3)  # checks has 4 trial records
    cost = client.get(f"/api/v1/runs/{project.runs['checks']}").json()["cost"]
    assert cost == {"summed": False, "records": 4, "summed_up_to": 3}


def test_a_snapshot_has_each_envs_state_and_digest(client, project) -> None:
    outputs = client.get(f"/api/v1/trials/{project.trials['graded']}").json()["record"]["outputs"]
    before, after = (
        client.get(f"/api/v1/snapshots/{quote(outputs[step]['snapshot'], safe='')}").json()
        for step in ("before", "after")
    )
    assert (before["at_step"], after["at_step"]) == ("before", "after")
    assert before["digest"] == outputs["before"]["digest"] and before["ref"].endswith("@1")
    assert (before["call_position"], after["call_position"]) == (0, 2)
    assert list(before["envs"]) == ["memo"] and before["taken_from"] == project.trials["graded"]
    memo_before, memo_after = before["envs"]["memo"], after["envs"]["memo"]
    assert memo_before["digest"] != memo_after["digest"]
    assert "groceries" not in json.dumps(memo_before["state"])
    assert "groceries" in json.dumps(memo_after["state"])


@pytest.mark.parametrize(
    ("ref", "words"),
    [
        ("nope", "no snapshot 'nope'"),
        ("nope@0", "versions start at 1"),
        ("..%2F..%2Fetc%2Fpasswd", "no snapshot '../../etc/passwd'"),
    ],
)
def test_an_unknown_snapshot_is_a_404_naming_it(client, project, ref, words) -> None:
    answer = client.get(f"/api/v1/snapshots/{ref}")
    assert answer.status_code == 404 and words in answer.json()["detail"]


def test_a_damaged_snapshot_is_a_404_that_says_so(client, project) -> None:
    """Its body gone from the object store: the API says which snapshot and why, not a 500."""
    import anyio

    from agent_env import results

    ref = project.recorded["graded"]["tasks"][0]["outputs"]["before"]["snapshot"]

    async def body_key() -> tuple[object, str, bytes]:
        stores = await results.open_configured_stores(project.root)
        entity_id, version = ref.rsplit("@", 1)
        entity = await stores.entities.get("task_snapshot", entity_id, int(version))
        key = entity.content["object_key"]
        return stores, key, await stores.objects.get(key)

    stores, key, body = anyio.run(body_key)
    anyio.run(stores.objects.delete, key)
    try:
        answer = client.get(f"/api/v1/snapshots/{quote(ref, safe='')}")
        assert answer.status_code == 404
        assert f"snapshot {ref} is damaged: its body" in answer.json()["detail"]
    finally:
        anyio.run(stores.objects.put, key, body)
        anyio.run(stores.close)
    assert client.get(f"/api/v1/snapshots/{quote(ref, safe='')}").status_code == 200
