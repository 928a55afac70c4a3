"""`agent-env runs list|show`: the run documents every front end writes through the run
pipeline and their task instance records, read from the configured stores."""

from __future__ import annotations

import json
from typing import Any

import anyio
import click

from agent_env.results import with_configured_stores


async def _list_documents(stores: Any, limit: int) -> list[dict[str, Any]]:
    return await _list(stores.documents, limit)


async def _list(documents: Any, limit: int) -> list[dict[str, Any]]:
    from agent_env.cli.toolkit import as_run
    from agent_env.results import RUNS
    from agentenv_reporting.summary import run_summary

    runs = [as_run(doc) for _, doc in await documents.list(RUNS)]
    runs.sort(key=lambda r: r.created_at or "", reverse=True)
    rows = []
    for run in runs[:limit]:
        summary = await run_summary(documents, run)
        rows.append(
            {
                "id": run.id,
                "created_at": run.created_at,
                "bundle": run.bundle.get("name"),
                "front_end": run.front_end,
                "runner": run.runner,
                "instances": summary["trials"],
                "trials_per_task": summary["trials_per_task"],
                "passed": summary["passed"],
                "failed": summary["failed"],
                "unscored": summary["unscored"],
                "unfinished": summary["unfinished"] + summary["cancelled"],
            }
        )
    return rows


@click.command("list")
@click.option(
    "--limit",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    help="Show the newest N runs.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_runs(limit: int, as_json: bool) -> None:
    """The newest runs: id, when, bundle, and how their task instances ended."""
    from agent_env.cli.toolkit import emit_rows

    def line(r: dict[str, Any]) -> str:
        k = r.get("trials_per_task") or 1
        trials = f" ({k} trials per task)" if k > 1 else ""
        return (
            f"{r['id']}  {r['created_at']}  {r['bundle']}  {r['passed']} of "
            f"{r['instances']} passed, {r['failed']} failed, {r['unfinished']} unfinished{trials}"
        )

    rows = anyio.run(with_configured_stores, _list_documents, limit)
    emit_rows(
        rows, as_json, empty="No runs recorded yet. Start one with: agent-env run hello", fmt=line
    )


async def _show_with_trajectories(stores: Any, ident: str) -> dict[str, Any]:
    from agent_env.results import trial_details

    data = await _show(stores.documents, ident)
    if "instance" in data:
        data.update(await trial_details(stores.objects, data["instance"]))
    return data


#: How many last lines of each kept log `runs show` prints (all of it: `--json`).
SHOWN_LOG_LINES = 15


def _show_logs(logs: dict[str, str]) -> None:
    """The tail of each sandbox's kept output."""
    for name, text in logs.items():
        lines = text.rstrip("\n").splitlines()
        click.echo(f"log {name}: {len(lines)} line(s), last {min(len(lines), SHOWN_LOG_LINES)}:")
        for line in lines[-SHOWN_LOG_LINES:]:
            click.echo(f"    {line}")


async def _show(documents: Any, ident: str) -> dict[str, Any]:
    """`{run, summary, instances}` (instances only for a single-trial run) or `{instance}`, as
    stored (JSON)."""
    from agent_env.cli.toolkit import load_record, read_run, run_records
    from agentenv_reporting.summary import run_summary

    run = await read_run(documents, ident)
    if run is not None:
        summary = await run_summary(documents, run)
        if run.trials > 1:
            return {"run": run.to_dict(), "summary": summary}
        records = [r.to_dict() async for r in run_records(documents, run)]
        return {"run": run.to_dict(), "summary": summary, "instances": records}
    return {"instance": await load_record(documents, ident)}


@click.command("show")
@click.argument("ident", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--wide", is_flag=True, help="Show the pass@k columns too (wider than 100 columns).")
def show(ident: str, as_json: bool, wide: bool) -> None:
    """A run (`run-...`: its results and the trials that did not pass, with their failure
    class and reason) or a task instance (`ti-...`: its steps)."""
    from agent_env.cli.toolkit import echo, emit_json, paint

    data = anyio.run(with_configured_stores, _show_with_trajectories, ident)
    if as_json:
        emit_json(data)
        return
    if "run" in data:
        run = data["run"]
        by = f"  ({run['front_end']})" if run.get("front_end") else ""
        click.echo(
            f"run {run['id']}  {run.get('created_at')}  bundle {run['bundle'].get('name')}{by}"
        )
        s = data["summary"]
        if "instances" not in data:
            from agent_env.cli.toolkit import TABLE_WIDTH, format_table, paint_rate

            click.echo(
                f"{s['trials']} trials ({s['trials_per_task']} per task): {s['passed']} passed, "
                f"{s['failed']} failed, {s['unscored']} unscored, {s['cancelled']} cancelled, "
                f"{s['unfinished']} unfinished"
            )
            for line in format_table(
                s["results"], wide=wide, width=TABLE_WIDTH - 2, style=paint_rate
            ):
                echo(f"  {line}")
        else:
            for r in data["instances"]:
                secs = r.get("seconds")
                took = f"{secs:.2f}s" if isinstance(secs, (int, float)) else "-"
                outcome = paint(r["outcome"] or r["status"], r["status"])
                echo(f"  {r['task']['name']}  {outcome}  {took}  {r['id']}")
        _show_cost(s.get("cost") or {}, run)
        _show_not_passed(s, run["id"])
        return
    r = data["instance"]
    click.echo(f"task instance {r['id']} (run {r['run_id']})")
    click.echo(f"task {r['task']['name']} v{r['task'].get('version')}  {r['task']['id']}")
    click.echo(f"outcome: {r['outcome'] or r['status']}")
    if r.get("cost"):
        from agent_env.costs import describe

        click.echo(f"cost: {describe(r['cost'])}")
    for restart in r.get("restarts") or []:
        steps = ", ".join(restart.get("steps") or [])
        click.echo(
            f"restarted on resume {restart.get('resume')}: {steps} ({restart.get('reason')})"
        )
    for step_id, info in r.get("steps", {}).items():
        secs = info.get("seconds")
        took = f"{secs:.2f}s" if isinstance(secs, (int, float)) else "-"
        tail = f"  {info['error']}" if info.get("error") else ""
        click.echo(
            f"  {step_id}: {info['status']} ({took}, attempts {info.get('attempts', 0)}){tail}"
        )
    _show_agents_and_verifiers(r, data.get("trajectories") or {})
    _show_logs(data.get("logs") or {})


def _show_cost(total: dict[str, Any], run: dict[str, Any]) -> None:
    """The run's costs added up, and why it stopped early when a budget stopped it."""
    from agent_env.costs import describe

    if total.get("trials"):
        click.echo(f"cost of {total['trials']} trial(s): {describe(total)}")
    stopped = run.get("stopped") or {}
    if stopped.get("reason") == "budget":
        click.echo(
            f"stopped for budget: ${stopped.get('spent_usd', 0):.4f} spent of "
            f"${stopped.get('budget_usd', 0):.4f}; {stopped.get('not_started', 0)} trial(s) "
            "not started"
        )


def _show_not_passed(summary: dict[str, Any], run_id: str) -> None:
    """The trials that did not pass: task, trial, failure class, reason, id (the first ones)."""
    from agent_env.cli.toolkit import echo, paint

    rows = summary.get("not_passed") or []
    if not rows:
        return
    total = summary["trials"] - summary["passed"] - summary["unfinished"]
    echo(f"trials not passed ({total}):" if total > len(rows) else "trials not passed:")
    for row in rows:
        cls = row["failure_class"] or row["status"]
        echo(
            f"  {row['task']} #{row['trial']}  {paint(f'[{cls}]', cls)}  {row['reason']}  "
            f"{row['id']}"
        )
    if total > len(rows):
        echo(f"  ... and {total - len(rows)} more: agent-env runs export {run_id}")


def _show_agents_and_verifiers(record: dict[str, Any], trajectories: dict[str, Any]) -> None:
    """The prompts (answer, tool calls, usage, failure) and each verifier's rows with reasons."""
    for output in (record.get("outputs") or {}).values():
        if not isinstance(output, dict) or "prompt_id" not in output or "response" not in output:
            continue
        usage = output.get("usage") or {}
        click.echo(
            f"prompt {output['prompt_id']} -> {output.get('agent_name')}: {output.get('status')}, "
            f"{len(output.get('tool_calls') or [])} tool call(s), "
            f"{usage.get('total_tokens', 0)} tokens"
        )
        for call in output.get("tool_calls") or []:
            mark = "error" if call.get("error") else "ok"
            click.echo(f"    {call.get('tool')}({json.dumps(call.get('arguments'))}) {mark}")
        if output.get("failure"):
            failure = output["failure"]
            click.echo(f"    failure ({failure.get('class')}): {failure.get('message')}")
        click.echo(f"    answer: {str(output.get('response') or '')[:300]}")
        events = (trajectories.get(output["prompt_id"]) or {}).get("events") or []
        if events:
            click.echo(f"    trajectory: {len(events)} event(s) at {output.get('trajectory')}")
    for step_id, output in (record.get("outputs") or {}).items():
        # a step's output may carry `shown`: lines it wants `runs show` to print (plain text)
        shown = output.get("shown") if isinstance(output, dict) else None
        if isinstance(shown, list) and shown:
            click.echo(f"{step_id}:")
            for line in shown:
                click.echo(f"    {line}")
    for vid, verifier in (record.get("verifiers") or {}).items():
        if not isinstance(verifier, dict):
            continue
        click.echo(f"verifier {vid}: score {verifier.get('score')}")
        for row in verifier.get("results") or []:
            if row.get("skipped"):
                continue
            mark = "pass" if row.get("result") else "FAIL"
            why = row.get("justification") or row.get("description") or ""
            click.echo(f"    {mark} {row.get('id')}: {str(why)[:200]}")
