"""How commands print: results to stdout (as text, or JSON with `--json`), progress and
warnings to stderr. One place, so every listing behaves the same."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import click


def err(message: str) -> None:
    """A progress or warning line on stderr (stdout stays machine-readable)."""
    click.echo(message, err=True)


def emit_json(data: Any, *, default: Callable[[Any], Any] | None = None) -> None:
    """`data` as indented JSON on stdout: what `--json` prints."""
    click.echo(json.dumps(data, indent=2, default=default))


def emit_rows(
    rows: Sequence[Any],
    as_json: bool,
    *,
    empty: str,
    fmt: Callable[[Any], str],
    header: str | None = None,
) -> None:
    """A listing: the rows as a JSON list with `--json`, else `empty` when there are none,
    else `header` (if any) and one `fmt(row)` line per row."""
    if as_json:
        emit_json(list(rows))
        return
    if not rows:
        click.echo(empty)
        return
    if header is not None:
        click.echo(header)
    for row in rows:
        click.echo(fmt(row))


def table(rows: Sequence[Sequence[str]]) -> str:
    """Rows (the first one a header) as left-aligned columns two spaces apart."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)).rstrip()
        for row in rows
    )


#: The colour of a trial status or failure class (green: the agent did it; red: it did not;
#: yellow: not the agent's doing, or not counted).
STATUS_COLORS = {
    "passed": "green",
    "failed": "red",
    "scored_below": "red",
    "agent": "red",
    "timeout": "red",
    "verifier": "red",
    "env": "red",
    "unscored": "yellow",
    "cancelled": "yellow",
    "infrastructure": "yellow",
    "verifier_error": "yellow",
}


def color_wanted(err: bool = False) -> bool:
    """Colour on a terminal, plain when piped; `NO_COLOR` (any value) turns it off and
    `FORCE_COLOR` (any value but 0) on, as https://no-color.org and most CLIs do."""
    if os.environ.get("NO_COLOR"):
        return False
    force = os.environ.get("FORCE_COLOR")
    if force is not None and force != "":
        return force != "0"
    stream = sys.stderr if err else sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def echo(message: str = "", *, err: bool = False) -> None:
    """`click.echo` with the colour decision of `color_wanted` (styles are stripped without)."""
    click.echo(message, err=err, color=color_wanted(err))


def paint(text: str, status: str | None) -> str:
    """`text` styled in the colour of `status` (a trial status or failure class), if it has one."""
    color = STATUS_COLORS.get(status or "")
    return click.style(text, fg=color) if color else text


def paint_rate(cell: str, rate: float | None) -> str:
    """A pass-rate cell: green when every counted trial passed, red when none did."""
    if rate is None:
        return cell
    status = "passed" if rate >= 1 else "failed" if rate <= 0 else "unscored"
    return paint(cell, status)
