"""Partitioned tables: contiguous row ranges, each a page store, under ``partitions.json``.

All partitions come from one ingest and share column widths and dictionaries, so one
query plan shape serves them all and their partial aggregates merge.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

from bamql.errors import StoreError
from bamql.storage.format import MANIFEST, ColumnMeta
from bamql.storage.store import PageStore

PARTITIONS = "partitions.json"
FORMAT = "bamql-partitioned"


def write_partitions(root: Path, table: str, parts: list[tuple[str, int, int]]) -> None:
    """Write ``partitions.json``: (directory, first row, rows) per partition."""
    doc = {"format": FORMAT, "format_version": 1, "table": table,
           "rows": sum(n for _, _, n in parts),
           "partitions": [{"path": p, "first_row": a, "rows": n} for p, a, n in parts]}
    path = root / PARTITIONS
    path.write_text(json.dumps(doc, indent=1))
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


class PartitionedTable:
    """A table split by row ranges; ``columns`` describe the whole table."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        try:
            doc = json.loads((self.path / PARTITIONS).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise StoreError(f"table {self.path}: {PARTITIONS} is unreadable ({e})") from None
        if doc.get("format") != FORMAT:
            raise StoreError(f"table {self.path}: {PARTITIONS} is not a bamql partition list")
        self.name = doc["table"]
        self.paths = [self.path / p["path"] for p in doc["partitions"]]
        self.parts = [PageStore(p) for p in self.paths]
        self.rows = sum(p.rows for p in self.parts)
        if self.rows != doc["rows"]:
            raise StoreError(f"table {self.path}: partitions hold {self.rows:,} rows, "
                             f"{PARTITIONS} says {doc['rows']:,}")
        first = self.parts[0]
        self.page_size = first.page_size
        self.columns: dict[str, ColumnMeta] = {}
        for name, c in first.columns.items():
            metas = [p.column(name) for p in self.parts]
            if any(m.dtype != c.dtype or m.dictionary != c.dictionary for m in metas):
                raise StoreError(f"table {self.path}: partitions disagree on column {name!r}")
            mins = [m.min for m in metas if m.min is not None]
            maxs = [m.max for m in metas if m.max is not None]
            hist = None
            if all(m.histogram is not None for m in metas):
                hist = {}
                for m in metas:
                    for k, v in m.histogram.items():
                        hist[k] = hist.get(k, 0) + v
            self.columns[name] = replace(
                c, n_pages=sum(m.n_pages for m in metas), nulls=sum(m.nulls for m in metas),
                min=min(mins) if mins else None, max=max(maxs) if maxs else None, histogram=hist)

    def column(self, name: str) -> ColumnMeta:
        try:
            return self.columns[name]
        except KeyError:
            raise StoreError(f"table {self.name!r} has no column {name!r}") from None

    def verify(self) -> list[str]:
        return [f"{p.path.name}: {x}" for p in self.parts for x in p.verify()]

    def close(self) -> None:
        for p in self.parts:
            p.close()

    def __enter__(self) -> PartitionedTable:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def is_table(path: Path) -> bool:
    """Whether ``path`` is a table directory (one store, or partitioned)."""
    return (path / MANIFEST).exists() or (path / PARTITIONS).exists()


def open_table(path: str | os.PathLike) -> PageStore | PartitionedTable:
    """Open a table directory, partitioned or not.

    A table replaced or removed while it is being opened (its files vanish between the
    manifest and the volumes) is a clear error, not an internal one.
    """
    p = Path(path)
    try:
        if (p / PARTITIONS).exists():
            return PartitionedTable(p)
        return PageStore(p)
    except FileNotFoundError as e:
        raise StoreError(f"table {p} changed or was removed while it was being opened "
                         f"({Path(e.filename or '').name or e.strerror}); open it again") from None
