"""The core steps together on a local sandbox, through the real engine."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio

GREETING = {"artifacts/greeting/greeting.txt": "Hello, agent-env!\n"}
DEPLOY = {"id": "box", "type": "deploy_sandbox", "sandbox_name": "box", "sandbox_mode": "vm"}
LOAD = {
    "id": "load",
    "type": "load_artifact",
    "sandbox_name": "box",
    "artifact_id": "greeting",
    "destination_path": "/app",
}


def verify(criteria, **extra):
    return {
        "id": "verify",
        "type": "verify_sandbox",
        "sandbox_name": "box",
        "verifier_id": "v",
        "criteria": criteria,
        **extra,
    }


async def test_deploy_load_verify_teardown_passes_and_leaves_nothing(runner):
    record = await runner.run(
        [
            DEPLOY,
            LOAD,
            verify(
                [
                    {"type": "probe_file_exists", "paths": ["greeting.txt"]},
                    {
                        "type": "probe_file_contains",
                        "paths": ["/app/greeting.txt"],
                        "expected": r"Hello, \w+",
                    },
                    {"type": "probe_dir_exists", "paths": ["."]},
                    {"type": "bash_cmd_succeeds", "bash_cmd": "grep -q agent-env greeting.txt"},
                ]
            ),
            {"id": "down", "type": "teardown_sandboxes", "sandbox_names": ["box"]},
        ],
        GREETING,
    )
    assert record["failure"] is None, record["failure"]
    assert record["outcome"] == "passed (v: 1)", record["outcome"]
    results = runner.state["verifiers"]["v"]["results"]
    assert [r["result"] for r in results] == [True, True, True, True]
    assert runner.state["verifiers"]["v"]["score"] == 1.0
    assert "box" not in runner.state.get("sandboxes", {})
    assert len(runner.state["torn_down_sandbox_ids"]) == 1
    assert runner.leftovers() == []


async def test_failing_criteria_score_zero_with_reasons(runner):
    record = await runner.run(
        [
            DEPLOY,
            LOAD,
            verify(
                [
                    {"type": "probe_file_exists", "paths": ["greeting.txt", "missing.txt"]},
                    {
                        "type": "probe_file_contains",
                        "paths": ["greeting.txt"],
                        "expected": "Goodbye",
                    },
                    {"type": "probe_dir_exists", "paths": ["greeting.txt"]},
                    {"type": "bash_cmd_succeeds", "bash_cmd": "echo nope >&2; exit 4"},
                    {"type": "response_contains", "needles": ["x"]},
                ]
            ),
        ],
        GREETING,
    )
    rows = runner.state["verifiers"]["v"]["results"]
    assert [r.get("result") for r in rows] == [False, False, False, False, None]
    assert "missing.txt" in rows[0]["justification"]
    assert "does not contain" in rows[1]["justification"]
    assert "exit=4" in rows[3]["justification"] and "nope" in rows[3]["justification"]
    assert rows[4]["skipped"] is True
    assert runner.state["verifiers"]["v"]["score"] == 0.0
    assert not record["outcome"].startswith("passed"), record["outcome"]
    assert runner.leftovers() == []


@pytest.mark.parametrize(
    ("aggregator", "score"), [("all_pass", 0.0), ("any_pass", 1.0), ("weighted_average", 0.75)]
)
async def test_score_aggregators(runner, aggregator, score):
    await runner.run(
        [
            DEPLOY,
            LOAD,
            verify(
                [
                    {"type": "probe_file_exists", "paths": ["greeting.txt"], "weight": 3},
                    {"type": "probe_file_exists", "paths": ["nope.txt"], "weight": 1},
                ],
                score_aggregator=aggregator,
            ),
        ],
        GREETING,
    )
    assert runner.state["verifiers"]["v"]["score"] == score


async def test_bash_cmd_timeout_fails_the_criterion_quickly(runner):
    import time

    started = time.monotonic()
    await runner.run(
        [
            DEPLOY,
            verify(
                [{"type": "bash_cmd_succeeds", "bash_cmd": "sleep 30"}], shell_timeout_seconds=1
            ),
        ]
    )
    row = runner.state["verifiers"]["v"]["results"][0]
    assert row["result"] is False and "timed out" in row["justification"]
    assert time.monotonic() - started < 15


async def test_aggregate_verifiers_combines_rows(runner):
    await runner.run(
        [
            DEPLOY,
            LOAD,
            verify([{"type": "probe_file_exists", "paths": ["greeting.txt"]}]),
            {
                "id": "v2",
                "type": "verify_sandbox",
                "sandbox_name": "box",
                "verifier_id": "w",
                "criteria": [{"type": "probe_file_exists", "paths": ["nope"]}],
            },
            {
                "id": "agg",
                "type": "aggregate_verifiers",
                "verifier_ids": ["v", "w"],
                "verifier_id": "all",
            },
        ],
        GREETING,
    )
    combined = runner.state["verifiers"]["all"]
    assert combined["score"] == 0.5
    assert combined["source_verifier_ids"] == ["v", "w"]
    assert len(combined["results"]) == 2


async def test_aggregate_of_an_unknown_verifier_fails_naming_it(runner):
    record = await runner.run(
        [
            DEPLOY,
            verify([{"type": "probe_dir_exists", "paths": ["/app"]}]),
            {
                "id": "agg",
                "type": "aggregate_verifiers",
                "verifier_ids": ["vv"],
                "verifier_id": "all",
            },
        ]
    )
    assert record["failure"]["step"] == "agg"
    assert (
        "'vv'" in record["failure"]["message"]
        and "did you mean 'v'" in record["failure"]["message"]
    )


async def test_fileset_artifact_keeps_its_layout(runner):
    files = {"artifacts/docs/a.md": "A", "artifacts/docs/sub/b.md": "B"}
    await runner.run(
        [
            DEPLOY,
            {
                "id": "load",
                "type": "load_artifact",
                "sandbox_name": "box",
                "artifact_id": "docs",
                "destination_path": "/app/docs",
            },
            verify(
                [
                    {
                        "type": "bash_cmd_succeeds",
                        "bash_cmd": 'test "$(cat docs/a.md docs/sub/b.md)" = AB',
                    }
                ]
            ),
        ],
        files,
    )
    assert runner.state["verifiers"]["v"]["score"] == 1.0
    loaded = runner.state["outputs"]["load"]["loaded"][0]
    assert loaded["files"] == ["/app/docs/a.md", "/app/docs/sub/b.md"]


async def test_env_vars_reach_the_sandbox(runner):
    await runner.run(
        [
            {**DEPLOY, "env_vars": {"TZ": "America/New_York"}},
            verify([{"type": "bash_cmd_succeeds", "bash_cmd": 'test "$TZ" = America/New_York'}]),
        ]
    )
    assert runner.state["verifiers"]["v"]["score"] == 1.0


async def test_a_limit_the_local_provider_cannot_enforce_fails_the_deploy(runner):
    record = await runner.run([{**DEPLOY, "cpu": 1.0}])
    assert record["failure"]["step"] == "box"
    assert "cannot enforce a cpus limit" in record["failure"]["message"]
    assert runner.leftovers() == []


async def test_default_destination_outside_app_is_refused_clearly_on_local(runner):
    record = await runner.run(
        [
            DEPLOY,
            {
                "id": "load",
                "type": "load_artifact",
                "sandbox_name": "box",
                "artifact_id": "greeting",
            },
        ],
        GREETING,
    )
    assert record["failure"]["step"] == "load"
    assert (
        "/loaded" in record["failure"]["message"] and "outside /app" in record["failure"]["message"]
    )


async def test_verify_without_sandbox_name_uses_the_only_sandbox(runner):
    await runner.run(
        [
            DEPLOY,
            {
                "id": "verify",
                "type": "verify_sandbox",
                "verifier_id": "v",
                "criteria": [{"type": "probe_dir_exists", "paths": ["/app"]}],
            },
        ]
    )
    assert runner.state["verifiers"]["v"]["score"] == 1.0


async def test_urls_are_downloaded_into_the_destination(runner, tmp_path):
    import functools
    import http.server
    import threading

    served = tmp_path / "served"
    served.mkdir()
    (served / "data.txt").write_text("remote data")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        await runner.run(
            [
                DEPLOY,
                {
                    "id": "get",
                    "type": "load_artifact",
                    "sandbox_name": "box",
                    "destination_path": "/app/in",
                    "urls": [
                        f"{base}/data.txt",
                        f"{base}/data.txt",
                        {"url": f"{base}/data.txt", "filename": "named.txt"},
                    ],
                },
                verify(
                    [
                        {"type": "probe_file_contains", "paths": [p], "expected": "^remote data$"}
                        for p in ("in/data.txt", "in/data-1.txt", "in/named.txt")
                    ]
                ),
            ]
        )
    finally:
        server.shutdown()
    assert runner.state["verifiers"]["v"]["score"] == 1.0
