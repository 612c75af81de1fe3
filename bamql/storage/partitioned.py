"""Tables as lists of partitions: contiguous row ranges, each a page store, listed in
``partitions.json``; a table of one page store is a table of one partition.

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
from bamql.storage.scratch import clean_leftovers
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
    """A table as a list of partitions, each a page store over a contiguous row range.

    A table ingested with ``--partitions`` lists its partitions in ``partitions.json``
    (``PartitionedTable(path)``); a table of one page store is a table of one partition
    (:meth:`of_store`). Either way ``columns`` describe the whole table and ``parts`` are
    the stores that the engines run.
    """

    def __init__(self, path: str | os.PathLike, verify_unsealed: bool = True) -> None:
        """Open the partitions that ``path``'s ``partitions.json`` lists (``verify_unsealed``:
        as ``PageStore``'s)."""
        path = Path(path)
        try:
            doc = json.loads(read_member(path, PARTITIONS, "partition list"))
        except (OSError, ValueError) as e:
            raise StoreError(f"table {path}: {PARTITIONS} is unreadable ({e})") from None
        name = doc.get("table") if isinstance(doc, dict) else None
        paths = _checked_paths(path, doc)
        parts: list[PageStore] = []
        try:
            for p in paths:
                parts.append(PageStore(p, verify_unsealed))
        except BaseException:
            for s in parts:
                s.close()
            raise
        self._assemble(path, name, parts, listed=True)
        first_rows = [p["first_row"] for p in doc["partitions"]]
        if (self.rows != doc["rows"] or first_rows != [sum(p.rows for p in self.parts[:k])
                                                       for k in range(len(self.parts))]
                or any(p.rows != d["rows"] for p, d in zip(self.parts, doc["partitions"],
                                                           strict=True))):
            self.close()
            raise StoreError(f"table {self.path}: partitions hold {self.rows:,} rows, "
                             f"{PARTITIONS} says otherwise (rows or row ranges differ)")
        self.columns = self._merged_columns()

    @classmethod
    def of_store(cls, store: PageStore) -> PartitionedTable:
        """``store`` as a table of one partition (its columns are the store's own)."""
        t = cls.__new__(cls)
        t._assemble(store.path, store.name, [store], listed=False)
        t.columns = store.columns
        return t

    def _assemble(self, path: Path, name: str | None, parts: list[PageStore], listed: bool) -> None:
        self.path = path
        self.name = name
        self.parts = parts
        self.paths = [p.path for p in parts]
        #: whether the table was ingested as partitions (``partitions.json``); EXPLAIN and
        #: the statistics speak of partitions, and a Dask cluster runs them, only then
        self.partitioned = listed
        self.rows = sum(p.rows for p in parts)
        self.page_size = parts[0].page_size
        self.value_sets = parts[0].value_sets  # one ingest: the partitions share a layout

    def _merged_columns(self) -> dict[str, ColumnMeta]:
        """The whole table's column metadata: page and null counts, ranges and histograms
        over all partitions."""
        columns: dict[str, ColumnMeta] = {}
        for name, c in self.parts[0].columns.items():
            metas = [p.column(name) for p in self.parts]
            if any(m.dtype != c.dtype or m.dictionary != c.dictionary for m in metas):
                self.close()
                raise StoreError(f"table {self.path}: partitions disagree on column {name!r}")
            mins = [m.min for m in metas if m.min is not None]
            maxs = [m.max for m in metas if m.max is not None]
            hist = None
            if all(m.histogram is not None for m in metas):
                hist = {}
                for m in metas:
                    for k, v in m.histogram.items():
                        hist[k] = hist.get(k, 0) + v
            columns[name] = replace(
                c, n_pages=sum(m.n_pages for m in metas), nulls=sum(m.nulls for m in metas),
                min=min(mins) if mins else None, max=max(maxs) if maxs else None, histogram=hist)
        return columns

    def column(self, name: str) -> ColumnMeta:
        try:
            return self.columns[name]
        except KeyError:
            raise StoreError(f"table {self.name!r} has no column {name!r}") from None

    def verify(self) -> list[str]:
        """The problems of every partition (named by its directory where there are several).
        A store found sound is trusted on this machine from then on (``storage.seal``), as
        one verified at open is."""
        if not self.partitioned:
            problems = self.parts[0].verify()
        else:
            problems = [f"{p.path.name}: {x}" for p in self.parts for x in p.verify()]
        if not problems:
            for p in self.parts:
                p.remember_verified()
        return problems

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


def open_table(path: str | os.PathLike, verify_unsealed: bool = True) -> PartitionedTable:
    """Open a table directory, partitioned or not (then a table of one partition).

    A table replaced or removed while it is being opened (its files vanish between the
    manifest and the volumes) is a clear error, not an internal one. What dead ingests into
    it left beside it (scratch directories, a free append lock) is removed first
    (``storage.scratch.clean_leftovers``); a live ingest's is not. A store not sealed on
    this machine is verified in full at open unless ``verify_unsealed`` is False
    (``storage.store``).
    """
    p = Path(path)
    clean_leftovers(p)
    try:
        if (p / PARTITIONS).exists():
            return PartitionedTable(p, verify_unsealed)
        return PartitionedTable.of_store(PageStore(p, verify_unsealed))
    except FileNotFoundError as e:
        raise StoreError(f"table {p} changed or was removed while it was being opened "
                         f"({Path(e.filename or '').name or e.strerror}); open it again") from None
