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
from bamql.storage.format import MANIFEST, ColumnMeta, digest, read_member
from bamql.storage.store import PageStore

PARTITIONS = "partitions.json"
FORMAT = "bamql-partitioned"


def write_partitions(root: Path, table: str, parts: list[tuple[str, int, int]]) -> None:
    """Write ``partitions.json``: (directory, first row, rows) per partition, sealed by a
    hash of its contents."""
    doc = {"format": FORMAT, "format_version": 2, "table": table,
           "rows": sum(n for _, _, n in parts),
           "partitions": [{"path": p, "first_row": a, "rows": n} for p, a, n in parts]}
    doc["sha256"] = digest(doc)
    path = root / PARTITIONS
    path.write_text(json.dumps(doc, indent=1))
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


class PartitionedTable:
    """A table split by row ranges; ``columns`` describe the whole table."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        try:
            doc = json.loads(read_member(self.path, PARTITIONS, "partition list"))
        except (OSError, ValueError) as e:
            raise StoreError(f"table {self.path}: {PARTITIONS} is unreadable ({e})") from None
        self.name = doc.get("table") if isinstance(doc, dict) else None
        self.paths = _checked_paths(self.path, doc)
        self.parts = []
        try:
            for p in self.paths:
                self.parts.append(PageStore(p))
        except BaseException:
            self.close()
            raise
        self.rows = sum(p.rows for p in self.parts)
        first_rows = [p["first_row"] for p in doc["partitions"]]
        if (self.rows != doc["rows"] or first_rows != [sum(p.rows for p in self.parts[:k])
                                                       for k in range(len(self.parts))]
                or any(p.rows != d["rows"] for p, d in zip(self.parts, doc["partitions"],
                                                           strict=True))):
            self.close()
            raise StoreError(f"table {self.path}: partitions hold {self.rows:,} rows, "
                             f"{PARTITIONS} says otherwise (rows or row ranges differ)")
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


def _checked_paths(root: Path, doc) -> list[Path]:
    """The partitions' directories: each a plain name directly inside the table's directory,
    each once, the document sealed by its hash. Anything else is refused: a
    partition list naming ``../other`` or the same store twice would read or double-count
    rows that are not this table's."""
    bad = f"table {root}: {PARTITIONS} "
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise StoreError(bad + "is not a bamql partition list")
    if doc.get("format_version") == 1:  # unsealed, and its partitions' stores are too
        raise StoreError(bad + "was written by an older bamql and is not sealed against "
                         "edits; re-ingest the table")
    if doc.get("format_version") != 2:
        raise StoreError(bad + f"has format version {doc.get('format_version')}, which this "
                         "bamql does not read")
    if doc.get("sha256") != digest(doc):
        raise StoreError(bad + "is corrupt or was edited (its hash does not match)")
    parts = doc.get("partitions")
    if (not isinstance(parts, list) or not parts or not isinstance(doc.get("rows"), int)
            or not all(isinstance(p, dict) and isinstance(p.get("path"), str)
                       and isinstance(p.get("first_row"), int) and isinstance(p.get("rows"), int)
                       for p in parts)):
        raise StoreError(bad + "is malformed")
    names = [p["path"] for p in parts]
    if len(set(names)) != len(names):
        raise StoreError(bad + "lists a partition twice")
    base = root.resolve()
    out = []
    for n in names:
        q = root / n
        if (n in ("", ".", "..") or "/" in n or "\\" in n or os.path.isabs(n)
                or q.resolve().parent != base or q.is_symlink() or not q.is_dir()):
            raise StoreError(bad + f"names {n!r}, which is not a partition directory inside it")
        out.append(q)
    return out


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
