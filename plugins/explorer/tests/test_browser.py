"""The explorer's pages in a real headless Chromium (Debian's /usr/bin/chromium driven by
Python playwright) against a real `agent-env up`: open the notes-agent run, open its trial,
see the tool calls and verifier rows, read a run's per-verifier pass rates and labelled score
histogram, a failed trial's seed values and why it has no verifier rows, pick two runs and
compare them (pass-rate changes, verifiers, the trials that flipped), read a trial's clock and
triggers panel (the ledger, the calls triggers made), read a run's and a trial's costs, the
per-step rewards beside the calls they score and the env state before and after a prompt
(task snapshots, what changed), start a run from the
page and watch it finish, look at a task's versions and the runs that used them. Screenshots of each page are kept under
`$AGENTENV_CI_CACHE/screenshots` (else the session's pytest temp folder, `screenshots/`)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_env.testing.require import require
from agentenv_explorer.headless import CHROMIUM, FLAGS, problem

pytestmark = pytest.mark.browser  # Chromium through playwright


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = os.environ.get("AGENTENV_CI_CACHE")
    folder = (
        Path(cache) / "screenshots" if cache else tmp_path_factory.getbasetemp() / "screenshots"
    )
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def served(project: Any, start_up: Any) -> Iterator[tuple[str, str]]:
    """`agent-env up` on a free loopback port in the project; its base URL and token."""
    proc, base, token = start_up(project)
    try:
        yield base, token
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def explorer(served: tuple[str, str]) -> str:
    """The explorer's base URL (the page below holds its token in a cookie)."""
    return served[0]


@pytest.fixture(scope="module")
def page(served: tuple[str, str]) -> Iterator[Any]:
    require(problem())
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.console_errors = []
            page.on(
                "console",
                lambda msg: page.console_errors.append(msg.text) if msg.type == "error" else None,
            )
            page.set_default_timeout(30_000)
            base, token = served
            page.goto(f"{base}/?token={token}")  # as a user opens the printed URL: the cookie
            yield page
        finally:
            browser.close()


def test_open_a_run_then_its_trial_with_tool_calls_and_verifiers(page, explorer, project, shots):
    page.goto(explorer + "/")
    row = page.locator("[data-testid=run-row]", has_text=project.runs["notes"])
    row.wait_for()
    assert "notes-agent" in row.inner_text() and "100.0%" in row.inner_text()
    page.screenshot(path=str(shots / "runs.png"), full_page=True)

    row.get_by_role("link").click()
    page.locator("[data-testid=task-row]").first.wait_for()
    assert "groceries" in page.locator("[data-testid=task-stats]").inner_text()
    assert "@1 1.00" in page.locator("[data-testid=task-stats]").inner_text()
    page.locator("[data-testid=score-histogram] rect").first.wait_for(state="attached")
    trial = page.locator("[data-testid=trial-row]")
    assert "passed" in trial.inner_text()
    page.screenshot(path=str(shots / "run.png"), full_page=True)

    trial.get_by_role("link").click()
    page.locator("[data-testid=tool-call]").first.wait_for()
    calls = page.locator("[data-testid=tool-call]").all_inner_texts()
    assert [c.split("\t")[3] for c in calls] == ["list_notes", "add_note"]
    assert "groceries" in calls[1]
    verifiers = page.locator("[data-testid=verifier-row]").all_inner_texts()
    assert verifiers and all("\tpass\t" in v for v in verifiers)
    assert page.locator("[data-testid=step]").count() == 6
    assert "serving 'notes'" in page.locator("[data-testid=log]").first.inner_text()
    page.screenshot(path=str(shots / "trial.png"), full_page=True)
    assert page.console_errors == []


def test_a_run_shows_which_verifier_fails_most_and_a_labelled_histogram(
    page, explorer, project, shots
):
    page.goto(explorer + "/#/runs")
    row = page.locator("[data-testid=run-row]", has_text=project.runs["checks"])
    row.wait_for()
    assert row.locator("[data-testid=run-by]").inner_text() == "run · local runner"

    row.get_by_role("link").click()
    page.locator("[data-testid=verifier-rate]").first.wait_for()
    assert "from run · local runner" in page.locator("[data-testid=run-meta]").inner_text()
    rates = [r.split("\t") for r in page.locator("[data-testid=verifier-rate]").all_inner_texts()]
    assert [(r[0], r[1], r[2]) for r in rates] == [
        ("strict", "2", "0"),
        ("word", "2", "1"),
        ("ready", "2", "2"),
    ]
    assert rates[1][3].startswith("50.0%")
    hist = page.locator("[data-testid=score-histogram]")
    # the broken trials are verifier errors (a sandbox their verifier names does not exist):
    # not the agent's scores, so not in the histogram
    assert hist.locator("[data-testid=bin-count]").all_text_contents() == ["1", "1"]
    assert hist.locator("[data-testid=y-tick]").all_text_contents() == ["0", "1"]
    labels = hist.locator("text.label").all_text_contents()
    assert labels == ["trials", "score"]
    assert "0.3–0.4: 1" in hist.get_attribute("aria-label")
    page.screenshot(path=str(shots / "run-verifiers.png"), full_page=True)

    broken = page.locator("[data-testid=trial-row]", has_text="broken").first
    broken.get_by_role("link").click()
    said = page.locator("[data-testid=verifiers]")
    said.wait_for()
    assert said.inner_text() == "no verifier ran: the trial failed at step 'look'"
    seeds = page.locator("[data-testid=seed-values]").inner_text()
    assert seeds.split("\n") == ["trial\t0", "seed\t7", "word\tkiwi"]
    page.screenshot(path=str(shots / "trial-no-verifiers.png"), full_page=True)
    assert page.console_errors == []


def test_a_trials_clock_and_triggers_panel(page, explorer, project, shots):
    page.goto(explorer + "/#/trial/" + project.trials["triggers"])
    page.locator("[data-testid=trigger-row]").first.wait_for()
    clock = page.locator("[data-testid=clock-state]").inner_text()
    assert clock.startswith("clock armed at 2026-03-09T12:50:00Z ×600")
    (trigger,) = [
        r.split("\t") for r in page.locator("[data-testid=trigger-row]").all_inner_texts()
    ]
    assert (trigger[0], trigger[2], trigger[3], trigger[4]) == ("customer-email", "fired", "1", "0")
    events = [e.split("\t") for e in page.locator("[data-testid=trigger-event]").all_inner_texts()]
    assert [e[3] for e in events] == ["added", "anchored", "detected", "action_ok", "fired"]
    delivered = next(e for e in events if e[3] == "action_ok")
    assert delivered[4] == "deliver_email" and delivered[0] >= "2026-03-09 13:05:00"
    (call,) = [c.split("\t") for c in page.locator("[data-testid=trigger-call]").all_inner_texts()]
    assert (call[1], call[2], call[3]) == ("customer", "mail", "deliver_email")
    page.screenshot(path=str(shots / "trial-triggers.png"), full_page=True)
    assert page.console_errors == []


def test_costs_per_step_rewards_and_env_state_before_and_after(page, explorer, project, shots):
    """The graded run: the run page adds up its cost; its trial shows its cost, each gateway
    call's step reward beside it and the memo env's state at both snapshots, with what the
    prompt changed."""
    page.goto(explorer + "/#/run/" + project.runs["graded"])
    page.locator("[data-testid=run-cost]").wait_for()
    assert page.locator("[data-testid=run-cost-usd]").inner_text() == "$0.7500"
    assert page.locator("[data-testid=run-cost-tokens]").inner_text() == "54"
    assert "33 in, 21 out" in page.locator("[data-testid=run-cost]").inner_text()
    assert page.locator("[data-testid=run-cost-sandboxes]").inner_text().startswith("local ")
    page.screenshot(path=str(shots / "run-cost.png"), full_page=True)

    page.locator("[data-testid=trial-row]").get_by_role("link").click()
    page.locator("[data-testid=state-diff]").wait_for()
    assert page.locator("[data-testid=cost-usd]").inner_text() == "$0.7500"
    assert page.locator("[data-testid=cost-tokens]").inner_text() == "54"
    (model,) = page.locator("[data-testid=cost-model]").all_inner_texts()
    assert model.split("\t") == ["scripted-1", "33", "21", "54"]
    calls = page.locator("[data-testid=tool-call]")
    tools = [c.split("\t")[3] for c in calls.all_inner_texts()]
    rewards = calls.locator("[data-testid=step-reward]").all_inner_texts()
    assert list(zip(tools, rewards, strict=True)) == [
        ("list_notes", "0.25 per-call"),
        ("add_note", "1.00 per-call"),
    ]
    assert page.locator("[data-testid=snapshot]").all_inner_texts() == [
        f"at step before: snapshot {project.recorded['graded']['tasks'][0]['outputs']['before']['snapshot']}",
        f"at step after: snapshot {project.recorded['graded']['tasks'][0]['outputs']['after']['snapshot']}",
    ]
    before, after = page.locator("[data-testid=env-state]").all_inner_texts()
    assert before.startswith("memo sha256:") and "groceries" not in before
    assert after.startswith("memo sha256:") and "groceries" in after
    assert page.locator("[data-testid=state-diff-env]").inner_text().startswith("memo ")
    changes = [c.split("\t") for c in page.locator("[data-testid=state-change]").all_inner_texts()]
    assert changes == [  # the env's data/get parts: the agent added the note 'groceries'
        ["added", "[0].data.notes[1].body", "–", "milk, eggs"],
        ["added", "[0].data.notes[1].title", "–", "groceries"],
    ]
    page.screenshot(path=str(shots / "trial-cost-rewards-state.png"), full_page=True)
    assert page.console_errors == []


def test_the_state_diff_names_each_key_added_removed_or_changed(page, explorer):
    """The page's key-level diff of two env states (a value changed, one removed, one added,
    a list grown, nested paths), and of an env present in only one snapshot."""
    page.goto(explorer + "/#/runs")
    page.locator("[data-testid=run-row]").first.wait_for()
    rows = page.evaluate(
        """() => {
          const text = (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent));
          return [
            text(stateDiff({n: 1, gone: "x", same: {k: [1]}, list: [1]},
                           {n: 2, same: {k: [1]}, list: [1, {a: null}], new: {}})),
            text(stateDiff(undefined, {a: {b: true}})),
            text(stateDiff({a: 1}, {a: 1})),
          ];
        }"""
    )
    assert rows == [
        [
            ["removed", "gone", "x", "–"],
            ["added", "list[1].a", "–", "null"],
            ["changed", "n", "1", "2"],
            ["added", "new", "–", "{}"],
        ],
        [["added", "a.b", "–", "true"]],
        [],
    ]
    assert page.console_errors == []


def test_a_damaged_snapshot_is_named_on_the_trial_page(page, explorer, project):
    """A snapshot whose body is gone: the trial page says which and why, and shows the rest."""
    import json

    ref = project.recorded["graded"]["tasks"][0]["outputs"]["after"]["snapshot"]
    # the body in the filesystem object store (the page's event loop rules out anyio.run here)
    (body,) = [
        path
        for path in project.home.rglob("snapshots/tasks/*.json")
        if json.loads(path.read_bytes())["taken_from"] == project.trials["graded"]
        and json.loads(path.read_bytes())["at_step"] == "after"
    ]
    aside = body.with_name(body.name + ".aside")
    body.rename(aside)
    try:
        page.goto(explorer + "/#/trial/" + project.trials["graded"])
        error = page.locator("[data-testid=snapshot-error]")
        error.wait_for()
        assert error.inner_text().startswith(f"after: snapshot {ref}: snapshot {ref} is damaged")
        assert page.locator("[data-testid=snapshot]").count() == 1  # 'before' still shown
        assert page.locator("[data-testid=state-diff]").count() == 0
        assert page.locator("[data-testid=cost-usd]").inner_text() == "$0.7500"
    finally:
        aside.rename(body)
    page.console_errors.clear()  # the browser logs the 404 it was answered


def test_pick_two_runs_and_compare_them(page, explorer, project, shots):
    page.goto(explorer + "/#/runs")
    for name in ("fruit-b", "fruit-a"):
        row = page.locator("[data-testid=run-row]", has_text=project.runs[name])
        row.locator("[data-testid=compare-pick]").check()
    page.locator("[data-testid=compare-selected]").click()
    page.locator("[data-testid=compare-task]").first.wait_for()
    assert f"a={project.runs['fruit-a']}&b={project.runs['fruit-b']}" in page.url
    runs = page.locator("[data-testid=compare-run]").all_inner_texts()
    assert runs[0].startswith(f"A\t{project.runs['fruit-a']}") and "1/3 33.3%" in runs[0]
    assert runs[1].startswith(f"B\t{project.runs['fruit-b']}") and "2/3 66.7%" in runs[1]
    change = page.locator("[data-testid=compare-change]").inner_text()
    assert "A → B: +33.3 pts [" in change
    [task] = page.locator("[data-testid=compare-task]").all_inner_texts()
    assert task.startswith("pick\t1/3 33.3% [") and "\t+33.3 pts [" in task
    verifiers = page.locator("[data-testid=compare-verifier]").all_inner_texts()
    assert [v.split("\t")[0] for v in verifiers] == ["word", "ready"]
    costs = [c.split("\t") for c in page.locator("[data-testid=compare-cost]").all_inner_texts()]
    assert [c[:3] for c in costs] == [
        ["A", "$0.0000", "0 (0 in, 0 out)"],
        ["B", "$0.0000", "0 (0 in, 0 out)"],
    ]
    assert all(c[3].startswith("local ") for c in costs)
    flips = [f.split("\t")[:5] for f in page.locator("[data-testid=flipped]").all_inner_texts()]
    assert flips == [
        ["broken", "pick", "1", "passed", "scored_below"],
        ["fixed", "pick", "0", "scored_below", "passed"],
        ["fixed", "pick", "2", "scored_below", "passed"],
    ]
    page.screenshot(path=str(shots / "compare.png"), full_page=True)
    page.locator("[data-testid=flipped]").first.get_by_role("link", name="scored_below").click()
    page.locator("[data-testid=seed-values]").wait_for()
    assert "kiwi" in page.locator("[data-testid=seed-values]").inner_text()
    assert page.console_errors == []


def test_start_a_run_from_the_page_and_watch_it_finish(page, explorer, shots):
    page.goto(explorer + "/#/runs")
    page.locator("[data-testid=start-spec]").fill("hello")
    page.locator("[data-testid=start-submit]").click()
    page.wait_for_url("**/#/run/run-*")
    page.locator("[data-testid=run-state]", has_text="finished").wait_for(timeout=120_000)
    counts = page.locator("[data-testid=run-counts]").inner_text()
    assert "1\npassed" in counts
    assert "from explorer · local runner" in page.locator("[data-testid=run-meta]").inner_text()
    assert "passed" in page.locator("[data-testid=trial-row]").inner_text()
    page.screenshot(path=str(shots / "started-run.png"), full_page=True)

    page.goto(explorer + "/#/runs")
    page.locator("[data-testid=start-spec]").fill("no-such-bundle")
    page.locator("[data-testid=start-submit]").click()
    error = page.locator("[data-testid=start-error]", has_text="neither a folder")
    error.wait_for()
    assert page.console_errors == [] or all("422" in e for e in page.console_errors)


def test_a_running_run_updates_live_over_server_sent_events(page, explorer, shots):
    """The run page follows a running run through /events: it renders again when the counts
    change (the trial starts, the run is cancelled), not on a timer."""
    page.console_errors.clear()  # the previous test's refused start logged a 422
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url) if "/trials?" in r.url else None)
    page.goto(explorer + "/#/runs")
    page.locator("[data-testid=start-spec]").fill("slow")
    page.locator("[data-testid=start-submit]").click()
    page.wait_for_url("**/#/run/run-*")
    page.locator("[data-testid=live]").wait_for()
    counts = page.locator("[data-testid=run-counts]")
    page.wait_for_function(
        "document.querySelector('[data-testid=run-counts]').innerText.includes('1\\nrunning')",
        timeout=60_000,
    )
    page.screenshot(path=str(shots / "live-run.png"), full_page=True)
    before = len(fetched)
    page.wait_for_timeout(3000)  # the trial sleeps: nothing changes, so nothing is fetched
    assert len(fetched) == before
    page.locator("[data-testid=cancel-run]").click()
    page.locator("[data-testid=run-state]", has_text="finished").wait_for(timeout=120_000)
    assert "0\nrunning" in counts.inner_text()
    assert "cancelled" in page.locator("[data-testid=trial-row]").inner_text()
    assert page.locator("[data-testid=live]").count() == 0
    assert page.console_errors == []


def test_a_task_shows_its_versions_and_the_runs_that_used_them(page, explorer, project, shots):
    page.goto(explorer + "/#/entities/tasks")
    page.locator("[data-testid=entity-row]", has_text="groceries").get_by_role("link").click()
    row = page.locator("[data-testid=version-row]").first
    row.wait_for()
    assert "v1" in row.inner_text() and project.runs["notes"] in row.inner_text()
    page.screenshot(path=str(shots / "task.png"), full_page=True)
