"""What each source column is stored as (a ``ColumnPlan``: kind, storage type, range,
scale or dictionary) and the conversion of a source batch to it."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bamql.errors import IngestError
from bamql.storage.decimals import DecimalScan, encode, real_nans, to_float64
from bamql.storage.encoding import float_storage, narrow_int_dtype, sentinel_for
from bamql.storage.sources import Source, select_columns
from bamql.storage.writer import ColumnPlan

#: Dictionary-coded strings are for small domains (flags, codes): at most this many values.
MAX_DICTIONARY = 32767


def _kind(t: pa.DataType) -> str | None:
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return "int"
    if pa.types.is_float32(t) or pa.types.is_float64(t) or pa.types.is_decimal(t):
        return "float"  # decimals are read as doubles (and stored as scaled integers)
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t):
        return "string"  # a column with no value at all (a CSV's empty one): VARCHAR, as DuckDB
    return None


def unify_schemas(sources: Sequence[Source]) -> list[tuple[str, str, pa.DataType]]:
    """Check that all sources share one schema; return (name, kind, widest type) per column."""
    first = sources[0]
    cols = []
    for f in first.schema:
        k = _kind(f.type)
        if k is None:
            raise IngestError(
                f"{first.path.name}: column {f.name!r} has type {f.type}, which bamql cannot store "
                "(supported: integers, booleans, float32/64, decimals, timestamps, small-domain "
                "strings)"
            )
        cols.append((f.name, k, pa.float64() if pa.types.is_decimal(f.type) else f.type))
    for s in sources[1:]:
        names = s.schema.names
        if names != [c[0] for c in cols]:
            raise IngestError(
                f"schemas disagree: {s.path.name} has columns {names}, "
                f"{first.path.name} has {[c[0] for c in cols]}"
            )
        for j, f in enumerate(s.schema):
            name, k, t = cols[j]
            if _kind(f.type) != k:
                raise IngestError(
                    f"schemas disagree: column {name!r} is {t} in {first.path.name} "
                    f"but {f.type} in {s.path.name}"
                )
            if k == "float" and (pa.types.is_float64(f.type) or pa.types.is_decimal(f.type)):
                cols[j] = (name, k, pa.float64())
    return cols


def _scan_floats(sources: Sequence[Source], names: list[str],
                 progress: Callable[[int], None] | None = None) -> dict[str, DecimalScan]:
    """One pass over the float64 columns ``names`` of every source (in parallel): which of
    them are decimals that fit a narrow scaled integer."""
    from concurrent.futures import ThreadPoolExecutor

    def one(s: Source) -> dict[str, DecimalScan]:
        scans = {n: DecimalScan() for n in names}
        for b in s.batches(columns=names):
            for n in names:
                if scans[n].decimals >= 0:
                    a = b.column(n)
                    v = to_float64(a)
                    scans[n].update(v, real_nans(a, v))
            if progress:
                progress(b.num_rows)
        return scans

    with ThreadPoolExecutor(min(len(sources), os.cpu_count() or 1)) as ex:
        parts = list(ex.map(one, sources))
    return {n: functools.reduce(DecimalScan.merge, (p[n] for p in parts)) for n in names}


def select(cols: list, columns: Sequence[str] | None, source: str) -> list:
    """The unified columns that ``columns`` names (all when None), in the sources' order."""
    if columns is None:
        return cols
    keep = select_columns([c[0] for c in cols], columns, source)
    return [c for c in cols if c[0] in keep]


def column_plans(sources: Sequence[Source], cols, floats: str = "auto",
                 scan_progress: Callable[[int], None] | None = None) -> list[ColumnPlan]:
    """The storage of each unified column: integers narrowed to their range, floats scanned
    for scaled-integer decimals (``floats="auto"``), strings dictionary-coded (sorted, so
    code order is string order). Reads the sources' statistics, and scans what they lack."""
    stats = [s.int_stats() for s in sources]
    need_scan = [n for n, k, _ in cols if k in ("int", "string")
                 and (k == "string" or any(st.get(n) is None for st in stats))]
    lo: dict[str, int] = {}
    hi: dict[str, int] = {}
    distinct: dict[str, set] = {n: set() for n, k, _ in cols if k == "string"}
    for st in stats:
        for n, r in st.items():
            if r is not None and n not in need_scan:
                lo[n] = min(lo.get(n, r[0]), r[0])
                hi[n] = max(hi.get(n, r[1]), r[1])
    if need_scan:
        for s in sources:
            for b in s.batches(columns=need_scan):
                for n in need_scan:
                    a = b.column(n)
                    if n in distinct:
                        distinct[n].update(x for x in pc.unique(a).to_pylist() if x is not None)
                        if len(distinct[n]) > MAX_DICTIONARY:
                            raise IngestError(
                                f"column {n!r} has more than {MAX_DICTIONARY} distinct strings; "
                                "bamql stores only small-domain strings (dictionary codes)"
                            )
                    else:
                        mm = pc.min_max(a.cast(pa.int64()) if pa.types.is_boolean(a.type) else a)
                        if mm["min"].is_valid:
                            lo[n] = min(lo.get(n, mm["min"].as_py()), mm["min"].as_py())
                            hi[n] = max(hi.get(n, mm["max"].as_py()), mm["max"].as_py())
    doubles = [n for n, k, t in cols if k == "float" and pa.types.is_float64(t)]
    scans = _scan_floats(sources, doubles, scan_progress) if floats == "auto" and doubles else {}
    if scan_progress and not scans:  # nothing to check: that pass is done
        scan_progress(sum(s.num_rows for s in sources))
    plans = []
    for n, k, t in cols:
        if k == "int":
            a, b = lo.get(n, 0), hi.get(n, 0)  # an all-null column: any range will do
            plans.append(ColumnPlan(n, k, narrow_int_dtype(a, b), a, b))
        elif k == "float":
            enc = scans[n].encoding() if n in scans else None
            if enc is not None:
                plans.append(ColumnPlan(n, k, enc[1], scale=enc[0]))
            else:
                plans.append(ColumnPlan(n, k, np.dtype(t.to_pandas_dtype())))
        elif k == "timestamp":
            plans.append(ColumnPlan(n, k, np.dtype(np.int64)))
        else:
            d = tuple(sorted(distinct[n]))  # sorted: code order is string order
            dt = np.dtype(np.int8) if len(d) < 127 else np.dtype(np.int16)
            plans.append(ColumnPlan(n, k, dt, 0, max(len(d) - 1, 0), d))
    return plans


def to_storage(a: pa.Array, pl: ColumnPlan) -> np.ndarray:
    """One batch's column ``a`` as stored under plan ``pl`` (NULLs as the sentinel)."""
    sent = sentinel_for(pl.dtype)
    if pl.kind == "int":
        if pa.types.is_boolean(a.type):
            a = a.cast(pa.int8())
        mm = pc.min_max(a)
        if mm["min"].is_valid and (mm["min"].as_py() < pl.lo or mm["max"].as_py() > pl.hi):
            raise IngestError(f"column {pl.name!r}: values outside the range its statistics gave")
        return a.fill_null(sent).to_numpy(zero_copy_only=False).astype(pl.dtype)
    if pl.kind == "float" and pl.scale:
        v = to_float64(a)
        if real_nans(a, v):  # scaled integers have no NaN: it would be stored as NULL
            raise IngestError(f"column {pl.name!r}: a NaN the scan that chose scaled integers "
                              "did not see; re-run with --floats plain")
        try:
            return encode(v, pl.scale, pl.dtype)
        except ValueError as e:
            raise IngestError(f"column {pl.name!r}: {e}") from None
    if pl.kind == "float":
        # a decimal kept as float64 (too many digits, or --floats plain), or a float as it
        # comes: NaNs canonical, NULLs the NULL bit pattern (encoding.float_storage)
        v = (to_float64(a) if pa.types.is_decimal(a.type)
             else a.cast(pa.from_numpy_dtype(pl.dtype)).to_numpy(zero_copy_only=False))
        return float_storage(v, np.asarray(a.is_null()) if a.null_count else None, pl.dtype)
    if pl.kind == "timestamp":
        try:
            us = a.cast(pa.timestamp("us", tz=a.type.tz)).cast(pa.int64())
        except pa.ArrowInvalid as e:
            raise IngestError(f"column {pl.name!r}: timestamps finer than microseconds ({e})") from None
        return us.fill_null(sent).to_numpy(zero_copy_only=False)
    codes = pc.index_in(a, value_set=pa.array(pl.dictionary or (), type=a.type))
    return codes.fill_null(sent).to_numpy(zero_copy_only=False).astype(pl.dtype)
