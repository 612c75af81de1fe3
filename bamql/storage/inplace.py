"""Files queried in place: only the columns a query names, and of Parquet only the row
groups whose statistics can hold a row its WHERE keeps, read into a page store made for
the query (``read_in_place``).

The pushed filter (:func:`pushed_filter`) is built from the WHERE's conjuncts that compare
one column with literals (``sql.file_refs.partition_filters``). It keeps a SUPERSET of the
rows the WHERE keeps, with DuckDB's semantics: the query then runs unchanged, its exact
WHERE included, over the rows read. A conjunct is pushed only where pyarrow compares as
DuckDB does; any other is left out (reading more, never less):

- integer columns against integer literals, and against decimal literals rounded to the
  integer bounds that keep the same integers;
- float columns against integer and decimal literals; DuckDB orders NaN above every
  number, so ``>``, ``>=`` and ``<>`` also keep NaN rows;
- string columns against string literals (both compare UTF-8 bytes);
- ``IN`` lists of such literals (a NULL in the list matches nothing), ``IS [NOT] NULL``;
- never: decimals, timestamps, booleans, dictionaries, a literal of another kind than the
  column (DuckDB would cast it), a column a file lacks (its rows read as NULL), a column
  of differing types in the files (DuckDB compares it in the type that unites them).
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from bamql.config import FloatEncoding
from bamql.errors import IngestError
from bamql.storage.files import FileSet
from bamql.storage.hive import Cmp, KeyFilter, check_columns
from bamql.storage.remote import RemotePath
from bamql.storage.sources import (
    OrcSource,
    ParquetSource,
    Source,
    TableSource,
    _reading,
    _unreadable,
    conformed,
)

#: the largest integer every float64 holds exactly (past it DuckDB and pyarrow may round
#: an integer literal differently against a float column)
_EXACT_F64 = 1 << 53
_EXACT_F32 = 1 << 24
_INT_RANGES = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}
_UINT_RANGES = {pa.uint8(): 8, pa.uint16(): 16, pa.uint32(): 32, pa.uint64(): 64}
_T = TypeVar("_T")
#: rows of a chunk below which a read's chunks are combined into one
_SMALL_CHUNK = 1 << 16


@dataclass(frozen=True)
class ReadSpec:
    """What a query reads of a file set: the names it mentions (lower case; None: every
    column, for ``SELECT *``) and the WHERE's conjuncts that may be pushed."""

    columns: frozenset[str] | None
    filters: tuple[KeyFilter, ...] = ()

    @property
    def key(self) -> tuple:
        """What identifies the rows and columns read (with the files' version)."""
        cols = None if self.columns is None else tuple(sorted(self.columns))
        return cols, self.filters


@dataclass(frozen=True)
class ReadReport:
    """What a read in place pruned and read, for EXPLAIN."""

    columns: tuple[str, ...]
    row_groups: int  # Parquet row groups (ORC stripes) of the files
    row_groups_read: int
    rows: int  # rows of the files
    rows_read: int  # rows that passed the pushed filter
    bytes_read: int  # compressed bytes of the columns read, in the row groups read
    column_bytes: int  # compressed bytes of those columns in the whole files
    pushed: str  # the pushed filter as text ('' for none)
    exact_bytes: bool  # whether the byte counts are per column (Parquet) or whole files

    def describe(self) -> str:
        """The EXPLAIN line: what was read of the files."""
        cols = ", ".join(self.columns) or "none"
        what = "column bytes" if self.exact_bytes else "file bytes (no per-column sizes)"
        push = f"; pushed filter {self.pushed}" if self.pushed else "; no filter pushed"
        return (f"read in place: row groups {self.row_groups_read:,} of {self.row_groups:,}, "
                f"rows {self.rows_read:,} of {self.rows:,}; columns {cols}; "
                f"{_size(self.bytes_read)} read of {_size(self.column_bytes)} {what}{push}")


@dataclass(frozen=True)
class InPlace:
    """A page store made from the rows and columns a query reads of a file set."""

    files: FileSet
    store: Path
    report: ReadReport

    def describe(self) -> str:
        return f"files: {self.files.describe()}, {self.report.describe()}"


def read_in_place(files: FileSet, spec: ReadSpec, out: Path) -> InPlace:
    """Read what ``spec`` needs of ``files`` and ingest it into a new page store at ``out``.

    Parameters
    ----------
    files
        The resolved files (after partition pruning).
    spec
        The columns the query mentions and the WHERE conjuncts that may be pushed.
    out
        The store to make; it must not exist (the caller removes it when done).
    """
    from bamql.storage.ingest import ingest
    from bamql.storage.writer import unsynced

    srcs = [files.open(i) for i in range(len(files.files))]
    names, filters = _prepared(srcs, files, spec)

    def one(s: Source) -> tuple[pa.Table, tuple]:
        cols = [n for n in s.schema.names if n in names]
        if cols or not s.schema.names:
            raw = s._f.schema_arrow if isinstance(s, ParquetSource) else s.schema
            t, st = _read(s, cols, pushed_filter(raw, filters))
            return conformed(t, s.schema), st  # as the options read it (binary_as_string)
        # a file without the columns read (union_by_name): its row count alone
        t, st = _read(s, [_narrowest(s)], None)
        return t.select([]), st

    read = [(_compacted(t), st) for t, st in _each(one, srcs)]
    tables = files.decorate_all([TableSource(t, s.path.name)
                                 for s, (t, _) in zip(srcs, read, strict=True)])
    stats = [st for _, st in read]
    try:
        # floats as they come: a pass that finds scaled decimals costs more than it saves
        # in a store that serves one query (DECIMAL columns keep it: DuckDB rounds them
        # exactly)
        with unsynced():  # the store lives as long as the session: no flush to disk
            ingest(tables, out, table=files.table_name, floats=FloatEncoding.DECIMALS)
    except IngestError:
        shutil.rmtree(out, ignore_errors=True)
        raise
    first = pushed_filter(srcs[0].schema, filters) if srcs else None
    return InPlace(files, out, ReadReport(
        tuple(names), sum(x[0] for x in stats), sum(x[1] for x in stats),
        sum(x[2] for x in stats), sum(x[3] for x in stats), sum(x[4] for x in stats),
        sum(x[5] for x in stats), "" if first is None else str(first),
        all(isinstance(s, ParquetSource) for s in srcs)))


def _prepared(srcs: Sequence[Source], files: FileSet,
              spec: ReadSpec) -> tuple[list[str], list[KeyFilter]]:
    """The file columns a read of ``spec`` takes of ``srcs`` and the filters it may push
    (the partition keys checked against the files' columns first)."""
    part = files.partitioning
    keys = () if part is None else part.keys
    for s in srcs if keys else ():
        check_columns(list(keys), s.schema.names, str(s.path))
    return _columns(srcs, spec.columns, keys), _agreed(srcs, spec.filters)


@dataclass(frozen=True)
class ReadPlan:
    """What :func:`read_in_place` would read of a file set, from the files' metadata alone
    (Parquet footers, ORC metadata, a CSV file's first block): for EXPLAIN."""

    files: FileSet
    #: (name, kind, Arrow type) of each column the store would hold, as ingest types them
    columns: tuple[tuple[str, str, pa.DataType], ...]
    report: ReadReport
    #: the number of files whose row groups carry statistics (Parquet)
    with_stats: int

    def describe(self) -> str:
        """The EXPLAIN lines on the files and what a read of them would take."""
        r = self.report
        n = len(self.files.files)
        cols = ", ".join(r.columns) or "none"
        if self.with_stats == n:
            groups = (f"row groups {r.row_groups_read:,} of {r.row_groups:,} kept by the "
                      f"pushed filter's statistics, holding {r.rows_read:,} of {r.rows:,} rows")
        elif self.with_stats:
            groups = (f"row groups and stripes {r.row_groups_read:,} of {r.row_groups:,} (the "
                      f"Parquet files' kept by the pushed filter's statistics; all of the others)")
        elif r.row_groups:
            groups = f"all {r.row_groups:,} stripes, rows {r.rows:,} (ORC: no statistics used)"
        else:
            groups = "all rows (CSV: no row groups nor statistics)"
        sizes = (f"{_size(r.bytes_read)} of {_size(r.column_bytes)} column bytes" if r.exact_bytes
                 else f"{_size(r.column_bytes)} file bytes (no per-column sizes)")
        push = f"pushed filter {r.pushed}" if r.pushed else "no filter pushed"
        return (f"files: {self.files.describe()}; EXPLAIN read their metadata only\n"
                f"would read in place: {groups}; columns {cols}; {sizes}; {push}")


def plan_in_place(files: FileSet, spec: ReadSpec) -> ReadPlan:
    """What :func:`read_in_place` would read of ``files`` for ``spec``, from their metadata
    only: the same columns, pushed filter and Parquet row groups (one function,
    ``_kept_row_groups``, prunes for both); the column types are checked as the read's
    ingest checks them (an unsupported type or a conflict between files is its error)."""
    from bamql.storage.columnplans import unify_schemas

    srcs = [files.open(i, count=False) for i in range(len(files.files))]
    names, filters = _prepared(srcs, files, spec)
    stats = []
    for s in srcs:
        cols = [n for n in s.schema.names if n in names]
        filt = pushed_filter(s.schema, filters) if cols else None
        if isinstance(s, ParquetSource):
            md = s._f.metadata
            try:
                kept = _kept_row_groups(_parquet_dataset(s), md.num_row_groups, filt)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
                raise _unreadable(s.path, "Parquet", e) from None
            rows = sum(md.row_group(g).num_rows for g in kept)
            stats.append(_parquet_counts(md, cols, kept, rows))
        else:
            groups = s._f.nstripes if isinstance(s, OrcSource) else 0
            stats.append((groups, groups, s.num_rows, s.num_rows, s.nbytes, s.nbytes))
    empty = files.decorate_all([TableSource(s.schema.empty_table().select(
        [n for n in s.schema.names if n in names]), s.path.name) for s in srcs])
    first = pushed_filter(srcs[0].schema, filters) if srcs else None
    report = ReadReport(
        tuple(names), sum(x[0] for x in stats), sum(x[1] for x in stats),
        sum(x[2] for x in stats), sum(x[3] for x in stats), sum(x[4] for x in stats),
        sum(x[5] for x in stats), "" if first is None else str(first),
        all(isinstance(s, ParquetSource) for s in srcs))
    return ReadPlan(files, tuple(unify_schemas(empty)), report,
                    sum(isinstance(s, ParquetSource) for s in srcs))


def _each(fn: Callable[[Source], _T], srcs: Sequence[Source]) -> list[_T]:
    """``fn`` of every source, in their order; where the files outnumber the cores, one file
    per core read at once in threads (pyarrow decodes without the GIL; fewer files already
    fill the cores with their row groups, and read no faster at once). A failure raises the
    error of the first file, in order, that failed (one line naming it), and the reads not
    yet started are not started."""
    workers = min(len(srcs), _cores())
    if len(srcs) <= workers:
        return [fn(s) for s in srcs]
    with ThreadPoolExecutor(workers) as ex:
        futs = [ex.submit(fn, s) for s in srcs]
        try:
            return [f.result() for f in futs]
        except BaseException:
            for f in futs:
                f.cancel()
            raise


def _cores() -> int:
    return os.cpu_count() or 1


def _compacted(t: pa.Table) -> pa.Table:
    """``t`` in one chunk where its chunks are small: a filtered read keeps a few rows of
    each batch it scanned, and the store's writer pays a fixed cost per chunk and column."""
    chunks = max((c.num_chunks for c in t.columns), default=0)
    return t.combine_chunks() if chunks > 1 and t.num_rows < chunks * _SMALL_CHUNK else t


def _agreed(srcs: Sequence[Source], filters: Sequence[KeyFilter]) -> list[KeyFilter]:
    """The ``filters`` on columns of one type in every file that has them: DuckDB compares
    a column of differing types (int64 in one file, double in another) in the type that
    unites them, where a file's own type may keep other rows (``x = 2^53 + 1`` keeps an
    int64 2^53 as a double)."""
    out = []
    for f in filters:
        types = {fld.type for s in srcs if (fld := _field(s.schema, f.column)) is not None}
        if len(types) <= 1:
            out.append(f)
    return out


def _columns(srcs: Sequence[Source], wanted: frozenset[str] | None,
             keys: Sequence[str]) -> list[str]:
    """The file columns to read, in the files' order: those ``wanted`` names (in any case),
    every one where ``wanted`` is None; at least one column (the first file's narrowest,
    by Parquet's sizes where it has them), so that the store keeps the row count."""
    have: list[str] = []
    for s in srcs:
        have += [n for n in s.schema.names if n not in have]
    if wanted is None:
        return have
    out = [n for n in have if n.casefold() in wanted]
    if out or not have:
        return out
    # one of a type in every file, where there is one: a column the query does not read
    # must not fail it on a type conflict between files (DuckDB never reads it)
    same = [n for n in srcs[0].schema.names
            if len({f.type for x in srcs if (f := _field(x.schema, n)) is not None}) == 1]
    return [_narrowest(srcs[0], same or None)]


def _narrowest(s: Source, among: Sequence[str] | None = None) -> str:
    """The column of ``s`` (of ``among``, when given) cheapest to read (the fewest
    compressed bytes in a Parquet file; the first otherwise)."""
    names = list(among) if among else s.schema.names
    if isinstance(s, ParquetSource):
        md = s._f.metadata
        sizes = {s.schema.names[i]: sum(md.row_group(g).column(i).total_compressed_size
                                        for g in range(md.num_row_groups))
                 for i in range(md.num_columns)} if md.num_columns == len(s.schema.names) else {}
        if sizes and all(n in sizes for n in names):
            return min(names, key=lambda n: sizes[n])
    return names[0]


def _read(s: Source, cols: list[str], filt: pc.Expression | None) -> tuple[pa.Table, tuple]:
    """The rows of ``s`` that ``filt`` keeps, columns ``cols``; and (row groups, row groups
    read, rows, rows read, bytes read, bytes of those columns)."""
    if isinstance(s, ParquetSource):
        return _read_parquet(s, cols, filt)
    with _reading(s.path):
        batches = list(s.batches(columns=cols)) if cols else []
    if cols:
        t = pa.Table.from_batches(batches, schema=pa.schema([s.schema.field(c) for c in cols])) \
            if batches else pa.table({c: pa.array([], s.schema.field(c).type) for c in cols})
    else:
        t = pa.table({})
    if filt is not None and t.num_columns:
        t = t.filter(filt)
    groups = s._f.nstripes if isinstance(s, OrcSource) else 1
    return t, (groups, groups, s.num_rows, t.num_rows, s.nbytes, s.nbytes)


def _read_parquet(s: ParquetSource, cols: list[str], filt: pc.Expression | None):
    md = s._f.metadata
    try:
        dset = _parquet_dataset(s)
        kept = _kept_row_groups(dset, md.num_row_groups, filt)
        with _reading(s.path):
            t = dset.to_table(columns=cols, filter=filt, use_threads=True) if cols else \
                pa.table({})
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
        raise _unreadable(s.path, "Parquet", e) from None
    return t, _parquet_counts(md, cols, kept, t.num_rows)


def _kept_row_groups(dset, total: int, filt: pc.Expression | None) -> list[int]:
    """The row groups (of ``total``) of the one-file Parquet dataset ``dset`` whose
    statistics can hold a row ``filt`` keeps: what a read reads and EXPLAIN counts."""
    if filt is None:
        return list(range(total))
    return [rg.id for frag in dset.get_fragments(filt)
            for f in frag.split_by_row_group(filt) for rg in f.row_groups]


def _parquet_counts(md, cols: Sequence[str], kept: Sequence[int], rows_read: int) -> tuple:
    """(row groups, row groups kept, rows, ``rows_read``, compressed bytes of ``cols`` in
    the groups kept, in all groups) of a Parquet file of metadata ``md``."""
    idx = [i for i in range(md.num_columns) if md.schema.column(i).path.split(".")[0] in cols]
    size = [[md.row_group(g).column(i).total_compressed_size for i in idx]
            for g in range(md.num_row_groups)]
    return (md.num_row_groups, len(kept), md.num_rows, rows_read,
            sum(sum(size[g]) for g in kept), sum(sum(r) for r in size))


def _parquet_dataset(s: ParquetSource):
    """``s`` as a one-file pyarrow dataset (its footer read again, no data)."""
    import pyarrow.dataset as ds  # pandas comes with it: only a Parquet query pays for it

    if isinstance(s.path, RemotePath):
        return ds.dataset(s.path.fs_path, format="parquet", filesystem=s.path.filesystem)
    return ds.dataset(str(s.path), format="parquet")


# -- the pushed filter ---------------------------------------------------------------------
def pushed_filter(schema: pa.Schema, filters: Sequence[KeyFilter]) -> pc.Expression | None:
    """The conjunction of the ``filters`` that can be pushed into a read of a file of
    ``schema`` (see the module's docstring), or None where none can."""
    out = None
    for f in filters:
        e = _pushed(schema, f)
        if e is not None:
            out = e if out is None else out & e
    return out


def _field(schema: pa.Schema, name: str) -> pa.Field | None:
    """The column ``name`` means (an exact name first; else one that matches it in any
    case, as DuckDB resolves unquoted names; None where none or several do)."""
    if name in schema.names:
        return schema.field(name) if schema.names.count(name) == 1 else None
    hits = [f for f in schema if f.name.casefold() == name.casefold()]
    return hits[0] if len(hits) == 1 else None


def _pushed(schema: pa.Schema, f: KeyFilter) -> pc.Expression | None:
    fld = _field(schema, f.column)
    if fld is None:
        return None
    x = pc.field(fld.name)
    t = fld.type
    if f.op == Cmp.IS_NULL:
        return x.is_null()
    if f.op == Cmp.NOT_NULL:
        return x.is_valid()
    kind = _kind(t)
    if kind is None:
        return None
    if f.op == Cmp.IN:
        vals = [v for v in f.values if v is not None]
        if not vals:
            return None  # x IN (NULL): no row; the WHERE says so
        parts = [_compare(kind, t, x, Cmp.EQ, v) for v in vals]
        if any(p is None for p in parts):
            return None
        out = parts[0]
        for p in parts[1:]:
            out = out | p
        return out
    (v,) = f.values
    if v is None:
        return None  # a comparison with NULL keeps no row; the WHERE says so
    return _compare(kind, t, x, f.op, v)


def _kind(t: pa.DataType) -> str | None:
    if t in _INT_RANGES or t in _UINT_RANGES:
        return "int"
    if t in (pa.float64(), pa.float32()):
        return "float"
    if t in (pa.string(), pa.large_string()):
        return "string"
    return None


_OPS = {Cmp.EQ: "equal", Cmp.NE: "not_equal", Cmp.LT: "less", Cmp.LE: "less_equal",
        Cmp.GT: "greater", Cmp.GE: "greater_equal"}


def _compare(kind: str, t: pa.DataType, x: pc.Expression, op: Cmp,
             v: int | str | Decimal) -> pc.Expression | None:
    """``x op v`` for a column of kind ``kind`` (a superset of DuckDB's answer), or None
    where it cannot be pushed."""
    if kind == "string":
        if type(v) is not str:
            return None
        return _op(x, op, pa.scalar(v, t))
    if type(v) is str:
        return None
    if kind == "int":
        if isinstance(v, Decimal):
            r = _int_bounds(op, v)
            if r is None:
                return None
            op, v = r
        lo, hi = _range(t)
        if not lo <= v <= hi:
            return None  # past the type's range: DuckDB widens, pyarrow would not cast
        return _op(x, op, pa.scalar(v, t))
    # float columns: an integer literal exact in the type, or a decimal literal in float64
    if isinstance(v, int):
        if abs(v) > (_EXACT_F64 if t == pa.float64() else _EXACT_F32):
            return None
        e = _op(x, op, pa.scalar(float(v), t))
    elif t == pa.float64() and math.isfinite(float(v)) and op != Cmp.NE:
        # DuckDB's double of a decimal may be an ulp off the nearest one: widen by a few
        lo, hi = _widened(float(v))
        e = {Cmp.EQ: (x >= pa.scalar(lo)) & (x <= pa.scalar(hi)), Cmp.LT: x <= pa.scalar(hi),
             Cmp.LE: x <= pa.scalar(hi), Cmp.GT: x >= pa.scalar(lo),
             Cmp.GE: x >= pa.scalar(lo)}[op]
    else:
        return None
    if op in (Cmp.GT, Cmp.GE, Cmp.NE):
        e = e | pc.is_nan(x)  # NaN is above every number in DuckDB (and unequal to them)
    return e


def _widened(v: float, ulps: int = 4) -> tuple[float, float]:
    lo = hi = v
    for _ in range(ulps):
        lo, hi = math.nextafter(lo, -math.inf), math.nextafter(hi, math.inf)
    return lo, hi


def _op(x: pc.Expression, op: Cmp, lit: pa.Scalar) -> pc.Expression:
    return pc.Expression._call(_OPS[op], [x, pc.scalar(lit)])


def _int_bounds(op: Cmp, v: Decimal) -> tuple[Cmp, int] | None:
    """``x op v`` for an integer ``x`` and a decimal ``v`` as a comparison with an integer
    that keeps the same integers (None where none does: ``x = 2.5`` keeps none)."""
    fl, ce = math.floor(v), math.ceil(v)
    if fl == ce:
        return op, int(fl)
    return {Cmp.GT: (Cmp.GT, fl), Cmp.GE: (Cmp.GT, fl), Cmp.LT: (Cmp.LT, ce),
            Cmp.LE: (Cmp.LT, ce)}.get(op)


def _range(t: pa.DataType) -> tuple[int, int]:
    if t in _INT_RANGES:
        b = _INT_RANGES[t]
        return -(1 << (b - 1)), (1 << (b - 1)) - 1
    return 0, (1 << _UINT_RANGES[t]) - 1


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n} B"
