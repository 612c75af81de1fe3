"""What a query answers, as a client holds it: ``Result`` (an Arrow table, its plan and its
I/O statistics) and its text.

Kept apart from ``exec.result``, which assembles results from the engine's accumulators,
so that a client of a bamql server (``bamql.connect("grpc://...")``, ``bamql sql --server``)
imports the result types and pyarrow, and none of the engine.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from bamql.errors import UsageError
from bamql.storage.iostats import QueryStats


@dataclass
class Result:
    """What a query returns: an Arrow table, the I/O statistics and the plan.

    It is an Arrow stream (the PyCapsule protocol): ``pa.table(res)``, ``pl.DataFrame(res)``
    and DuckDB's ``SELECT * FROM res`` read its table without a copy. ``fetchone``,
    ``fetchmany`` and ``fetchall`` return rows as tuples of Python values, as DuckDB's do,
    moving one cursor over the rows.
    """

    table: pa.Table
    stats: QueryStats | None
    plan_text: str
    #: True for EXPLAIN [ANALYZE]: ``table`` then holds the plan's lines, column "explain"
    is_explain: bool = False
    #: the next row ``fetchone``/``fetchmany``/``fetchall`` return
    _cursor: int = field(default=0, init=False, repr=False, compare=False)

    # -- the Arrow PyCapsule interface -------------------------------------------------
    def __arrow_c_stream__(self, requested_schema=None):
        """The table as an Arrow C stream (``ArrowArrayStream`` capsule)."""
        return self.table.__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self):
        """The table's schema as an Arrow C schema (``ArrowSchema`` capsule)."""
        return self.table.schema.__arrow_c_schema__()

    # -- conversions ---------------------------------------------------------------------
    def to_arrow(self) -> pa.Table:
        return self.table

    def arrow(self) -> pa.Table:
        """The rows as an Arrow table (DuckDB's name for ``to_arrow``)."""
        return self.to_arrow()

    def df(self):
        """The rows as a pandas DataFrame (DuckDB's name for ``to_pandas``)."""
        return self.to_pandas()

    def pl(self):
        """The rows as a polars DataFrame (DuckDB's name for ``to_polars``)."""
        return self.to_polars()

    def show(self) -> None:
        """Print the rows as a table, as DuckDB's ``show`` does."""
        print(self)

    def to_pandas(self):
        return self.table.to_pandas()

    def to_polars(self):
        """The table as a polars DataFrame (polars is optional)."""
        try:
            import polars as pl
        except ModuleNotFoundError as e:
            if e.name != "polars":
                raise
            raise UsageError("polars is not installed; pip install polars") from None
        return pl.from_arrow(self.table)

    def to_numpy(self) -> dict[str, np.ndarray]:
        """Each column as a NumPy array, by name, as DuckDB's ``fetchnumpy``: a column with
        NULLs is a masked array (``numpy.ma``), strings are object arrays."""
        out = {}
        for name, c in zip(self.table.column_names, self.table.columns, strict=True):
            c = c.combine_chunks() if c.num_chunks != 1 else c.chunk(0)
            if c.null_count == 0:
                out[name] = c.to_numpy(zero_copy_only=False)
                continue
            mask = c.is_null().to_numpy(zero_copy_only=False)
            if pa.types.is_integer(c.type) or pa.types.is_boolean(c.type):
                fill = False if pa.types.is_boolean(c.type) else 0
                values = c.fill_null(fill).to_numpy(zero_copy_only=False)
            else:
                values = c.to_numpy(zero_copy_only=False)
            out[name] = np.ma.masked_array(values, mask=mask)
        return out

    # -- rows --------------------------------------------------------------------------
    @property
    def columns(self) -> list[str]:
        """The column names."""
        return self.table.column_names

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns)."""
        return self.table.num_rows, self.table.num_columns

    def __len__(self) -> int:
        return self.table.num_rows

    def __bool__(self) -> bool:  # a Result is a result, even of no rows
        return True

    def __iter__(self) -> Iterator[tuple]:
        """Every row, as a tuple (the fetch cursor does not move)."""
        return iter(self._rows(0, self.table.num_rows))

    def rows(self) -> list[tuple]:
        return self._rows(0, self.table.num_rows)

    def _rows(self, start: int, stop: int) -> list[tuple]:
        part = self.table.slice(start, max(stop - start, 0))
        cols = [c.to_pylist() for c in part.columns]
        return list(zip(*cols, strict=True)) if cols else []

    def fetchone(self) -> tuple | None:
        """The next row, or None after the last."""
        rows = self.fetchmany(1)
        return rows[0] if rows else None

    def fetchmany(self, size: int = 1) -> list[tuple]:
        """The next ``size`` rows (fewer at the end)."""
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 0:
            raise UsageError(f"fetchmany() takes a row count >= 0, not {size!r}")
        start = self._cursor
        self._cursor = min(start + int(size), self.table.num_rows)
        return self._rows(start, self._cursor)

    def fetchall(self) -> list[tuple]:
        """The rows not fetched yet."""
        return self.fetchmany(self.table.num_rows - self._cursor)

    # -- text ----------------------------------------------------------------------------
    def explain(self) -> str:
        """The plan and, after a run, what it read (EXPLAIN ANALYZE)."""
        if self.stats is None:
            return self.plan_text
        return self.plan_text + "\nAnalyze:\n" + self.stats.table_text()

    def __repr__(self) -> str:
        return format_table(self.table)

    def _repr_html_(self, max_rows: int = 50) -> str:
        """An HTML table for notebooks: at most ``max_rows`` rows, every cell escaped; an
        EXPLAIN's plan as preformatted text."""
        if self.is_explain:
            return f"<pre>{html.escape(chr(10).join(map(str, self.table.column(0).to_pylist())))}</pre>"
        head = "".join(f"<th>{html.escape(n)}</th>" for n in self.table.column_names)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(x))}</td>" for x in r) + "</tr>"
                       for r in self._rows(0, max_rows))
        n = self.table.num_rows
        more = (f"<p>… {n - max_rows:,} more rows ({n:,} in all)</p>" if n > max_rows
                else f"<p>{n:,} row{'s' * (n != 1)}</p>")
        return (f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}")


def format_table(t: pa.Table, max_rows: int = 50) -> str:
    """A plain-text grid of an Arrow table."""
    names = t.column_names
    rows = [[_cell(x) for x in r] for r in zip(*(c.to_pylist() for c in t.columns), strict=True)]
    shown = rows[:max_rows]
    widths = [max([len(n)] + [len(r[i]) for r in shown]) for i, n in enumerate(names)]
    sep = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    out = [sep, "| " + " | ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)) + " |", sep]
    for r in shown:
        out.append("| " + " | ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) + " |")
    out.append(sep)
    if len(rows) > max_rows:
        out.append(f"({len(rows)} rows, {max_rows} shown)")
    else:
        out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)


def _cell(x) -> str:
    if x is None:
        return "NULL"
    if isinstance(x, float):
        return f"{x:.6g}" if abs(x) < 1e15 else repr(x)
    return str(x)
