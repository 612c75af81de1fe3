"""Rendering results for the CLI and the shell: table, box, markdown, line, csv or json
(the shell's ``.mode`` names, as DuckDB's).

pyarrow loads when a result is rendered, not when the CLI's parser reads ``FORMATS``.
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

FORMATS = ("table", "box", "markdown", "line", "csv", "json")


def render(t: pa.Table, fmt: str) -> str:
    """An Arrow table as text in ``fmt``."""
    if fmt == "csv":
        import pyarrow.csv as pacsv

        buf = io.BytesIO()
        pacsv.write_csv(t, buf)
        return buf.getvalue().decode().rstrip("\n")
    if fmt == "json":
        rows = t.to_pylist()
        return json.dumps(rows, default=str, indent=None)
    if fmt in ("markdown", "line", "box"):
        return _text(t, fmt)
    from bamql.exec.resultset import format_table

    return format_table(t)


def _cell(v) -> str:
    return "NULL" if v is None else str(v)


def _text(t: pa.Table, fmt: str) -> str:
    """Markdown (a pipe table), line (one ``column = value`` per line, rows apart) or box
    (the table drawn with box characters)."""
    names = t.column_names
    rows = [[_cell(v) for v in r.values()] for r in t.to_pylist()]
    if fmt == "line":
        w = max((len(n) for n in names), default=0)
        return "\n\n".join("\n".join(f"{n:>{w}} = {v}" for n, v in zip(names, r, strict=True))
                           for r in rows)
    widths = [max([len(n), *(len(r[i]) for r in rows)]) for i, n in enumerate(names)]
    if fmt == "markdown":
        head = "| " + " | ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)) + " |"
        rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
        body = ["| " + " | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) + " |"
                for r in rows]
        return "\n".join([head, rule, *body])
    top = "┌" + "┬".join("─" * (w + 2) for w in widths) + "┐"
    mid = "├" + "┼".join("─" * (w + 2) for w in widths) + "┤"
    bottom = "└" + "┴".join("─" * (w + 2) for w in widths) + "┘"
    line = lambda cells: "│ " + " │ ".join(  # noqa: E731
        c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " │"
    return "\n".join([top, line(names), mid, *(line(r) for r in rows), bottom])
