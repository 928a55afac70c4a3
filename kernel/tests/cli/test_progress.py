"""The progress display: one rewritten line on a terminal, plain periodic lines otherwise."""

from __future__ import annotations

import io

import anyio

from agent_env.cli.progress import Progress


def test_terminal_rewrites_one_line_and_ends_it():
    out = io.StringIO()
    p = Progress(10, stream=out, tty=True)
    p.started()
    p.started()
    p.finished(True)
    p.draw()
    p.finished(False)
    p.close()
    text = out.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n") and text.count("\n") == 1
    first = text.split("\r")[1]
    assert first.startswith("trials 1/10 done, 1 running, 0 not passed") and "ETA" in first
    assert "\x1b[K" in first
    assert "trials 2/10 done, 0 running, 1 not passed" in text.split("\r")[2]


def test_plain_lines_every_interval_and_kept_trials_count_as_done():
    out = io.StringIO()
    p = Progress(5, kept=3, stream=out, tty=False, interval=0.05)

    async def main():
        async with anyio.create_task_group() as tg:
            tg.start_soon(p.ticker)
            await anyio.sleep(0.18)
            tg.cancel_scope.cancel()

    anyio.run(main)
    p.close()
    lines = out.getvalue().splitlines()
    assert len(lines) >= 3 and all(ln.startswith("trials 3/5 done") for ln in lines)
    assert "\r" not in out.getvalue()
