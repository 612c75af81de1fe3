"""Rendering results for the CLI and the shell: table, csv or json.

pyarrow loads when a result is rendered, not when the CLI's parser reads ``FORMATS``.
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

FORMATS = ("table", "csv", "json")


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
    from bamql.engine.result import format_table

    return format_table(t)
