"""Rendering results for the CLI and the shell: table, csv or json."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.csv as pacsv

from bamql.engine.result import format_table

FORMATS = ("table", "csv", "json")


def render(t: pa.Table, fmt: str) -> str:
    """An Arrow table as text in ``fmt``."""
    if fmt == "csv":
        buf = io.BytesIO()
        pacsv.write_csv(t, buf)
        return buf.getvalue().decode().rstrip("\n")
    if fmt == "json":
        rows = t.to_pylist()
        return json.dumps(rows, default=str, indent=None)
    return format_table(t)
