"""The existing product's per-task routes (`/api/v1/tasks/{id}/run`, `/runs`, `/cancel-run`,
`/instances`, `/progress`, `/run-groups`) and `/api/v1/objects/...`, over real runs of stored
tasks started in the explorer's process."""

from __future__ import annotations

import time
from urllib.parse import quote

import anyio
import pytest


def _task_id(client, name: str) -> str:
    items = client.get(f"/api/v1/tasks?id={name}").json()["items"]
    [task] = [t for t in items if t["id"].rpartition("/")[2] == name]
    return quote(task["id"], safe="")


def _wait_done(client, url: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = client.get(url)
        assert answer.status_code == 200, answer.text
        if answer.json()["done"]:
            return answer.json()
        time.sleep(0.2)
    raise AssertionError(f"{url} never said done")


def test_run_a_stored_task_and_follow_its_instance(client, project) -> None:
    tid = _task_id(client, "hello")
    answer = client.post(f"/api/v1/tasks/{tid}/run", json={})
    assert answer.status_code == 202, answer.text
    started = answer.json()
    assert started["status"] == "QUEUED" and started["workflow_id"].startswith("run-")
    iid = started["instance_id"]
    progress = _wait_done(client, f"/api/v1/tasks/{tid}/instances/{iid}/progress")
    assert set(progress) == {
        "instance_id",
        "status",
        "current_step",
        "total_steps",
        "completed_steps",
        "done",
    }
    assert progress["status"] == "passed" and progress["total_steps"] >= 1
    assert [s["status"] for s in progress["completed_steps"]] == ["completed"] * len(
        progress["completed_steps"]
    )
    instance = client.get(f"/api/v1/tasks/{tid}/instances/{iid}").json()
    assert instance["task_id"] == quote_back(tid) and instance["context"]["metadata"]
    listed = client.get(f"/api/v1/tasks/{tid}/instances?limit=500").json()
    assert iid in [i["instance_id"] for i in listed["items"]] and listed["total"] >= 2
    runs = client.get(f"/api/v1/tasks/{tid}/runs").json()
    [mine] = [r for r in runs["items"] if r["run_id"] == started["workflow_id"]]
    assert mine["status"] == "COMPLETED" and mine["counts"]["passed"] == 1
    assert project.runs["hello"] in [r["run_id"] for r in runs["items"]]  # the CLI's run too
    # an instance of the task is not one of another task
    notes = _task_id(client, "groceries")
    assert client.get(f"/api/v1/tasks/{notes}/instances/{iid}").status_code == 404


def quote_back(encoded: str) -> str:
    from urllib.parse import unquote

    return unquote(encoded)


def test_a_run_group_counts_its_trials_and_steps(client) -> None:
    tid = _task_id(client, "hello")
    answer = client.post(f"/api/v1/tasks/{tid}/runs", json={"count": 3})
    assert answer.status_code == 202, answer.text
    group = answer.json()
    assert group["total"] == 3 and [r["index"] for r in group["runs"]] == [0, 1, 2]
    gid = group["run_group_id"]
    for run in group["runs"]:
        _wait_done(client, f"/api/v1/tasks/{tid}/instances/{run['instance_id']}/progress")
    deadline = time.monotonic() + 30
    while (shown := client.get(f"/api/v1/tasks/{tid}/run-groups/{gid}").json())[
        "status"
    ] == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert (shown["total"], shown["completed"], shown["passed"], shown["waiting"]) == (3, 3, 3, 0)
    assert shown["step_counts"] and all(
        c == {"done": 3, "failed": 0} for c in shown["step_counts"].values()
    )
    assert len(shown["instances"]) == 3 and shown["step_counts_complete"]
    groups = client.get(f"/api/v1/tasks/{tid}/run-groups").json()["items"]
    assert gid in [g["run_group_id"] for g in groups]


def test_cancel_a_task_run(client, project) -> None:
    # the slow task gets stored by running its folder once (cancelled at once)
    first = client.post("/api/v1/runs", json={"spec": "slow"}).json()["run_id"]
    client.post(f"/api/v1/runs/{first}/cancel")
    tid = _task_id(client, "slow")
    started = client.post(f"/api/v1/tasks/{tid}/run", json={}).json()
    progress_url = f"/api/v1/tasks/{tid}/instances/{started['instance_id']}/progress"
    deadline = time.monotonic() + 60
    while (seen := client.get(progress_url).json())["current_step"] != "wait":
        assert time.monotonic() < deadline, f"the slow step never started: {seen}"
        time.sleep(0.1)
    answer = client.post(f"/api/v1/tasks/{tid}/cancel-run?workflow_id={started['workflow_id']}")
    assert answer.json() == {"workflow_id": started["workflow_id"], "canceled": True}
    assert _wait_done(client, progress_url, timeout=60)["status"] == "cancelled"
    again = client.post(f"/api/v1/tasks/{tid}/cancel-run?workflow_id={started['workflow_id']}")
    assert again.json()["canceled"] is False
    unknown = client.post(f"/api/v1/tasks/{tid}/cancel-run?workflow_id=run-nope")
    assert unknown.status_code == 404


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        ("run", {"agent_modle": "x"}, 400, "did you mean 'agent_model'"),
        ("run", {"start_step": "x"}, 501, "start_step: not supported"),
        ("run", {"version": "2"}, 400, "version: a whole number"),
        ("run", {"version": 99}, 422, "has no version 99"),
        ("runs", {"count": 101}, 400, "count: required, a whole number from 1 to 100"),
        ("runs", {"seeds": [1, 2]}, 501, "seeds: not supported"),
    ],
)
def test_bad_task_run_requests_start_nothing(client, path, body, status, words) -> None:
    tid = _task_id(client, "hello")
    before = client.get("/api/v1/runs").json()["total"]
    answer = client.post(f"/api/v1/tasks/{tid}/{path}", json=body)
    assert answer.status_code == status, answer.text
    assert words in answer.json()["detail"]
    assert client.get("/api/v1/runs").json()["total"] == before


def test_unknown_task_and_method(client) -> None:
    answer = client.post(f"/api/v1/tasks/{quote('@local/x/nope', safe='')}/run", json={})
    assert answer.status_code == 404 and "GET /api/v1/tasks lists them" in answer.json()["detail"]
    tid = _task_id(client, "hello")
    assert client.post(f"/api/v1/tasks/{tid}/instances").status_code == 405
    unencoded = client.post(f"/api/v1/tasks/{quote_back(tid)}/run", json={})
    assert unencoded.status_code == 405 and "percent-encoded" in unencoded.json()["detail"]
    # the entity routes still answer under /api/v1/tasks/
    assert client.get(f"/api/v1/tasks/{tid}/versions").status_code == 200


def test_objects_content_and_metadata(client, project) -> None:
    from agent_env import results

    key = client.get(f"/api/v1/trials/{project.trials['notes']}").json()["record"]["id"]
    log = f"trial-logs/{key}/env_notes.log"
    answer = client.get(f"/api/v1/objects/content?object_url={quote(log)}")
    assert answer.status_code == 200 and b"serving 'notes'" in answer.content
    assert answer.headers["content-disposition"].startswith("inline")
    meta = client.get(f"/api/v1/objects/metadata?object_url={quote(log)}").json()
    assert meta == {"size_bytes": len(answer.content), "content_type": "text/plain"}

    async def put_page() -> None:
        stores = await results.open_configured_stores(project.root)
        try:
            await stores.objects.put("explorer-test/page.html", b"<script>alert(1)</script>")
        finally:
            await stores.close()

    anyio.run(put_page)
    page = client.get("/api/v1/objects/content?object_url=explorer-test/page.html")
    assert page.headers["content-type"].startswith("text/html")
    assert "sandbox" in page.headers.get_list("content-security-policy")
    foreign = client.get("/api/v1/objects/content?object_url=s3://bucket/x.txt")
    assert foreign.status_code == 400 and "not an object of the configured store" in foreign.text
    missing = client.get("/api/v1/objects/metadata?object_url=no/such.txt")
    assert missing.status_code == 404
