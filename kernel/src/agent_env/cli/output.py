"""How commands print: results to stdout (as text, or JSON with `--json`), progress and
warnings to stderr. One place, so every listing behaves the same."""

from __future__ import annotations

import json
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
