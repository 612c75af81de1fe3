"""What each source column is stored as (a ``ColumnPlan``: kind, storage type, range,
scale or dictionary) and the conversion of a source batch to it."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bamql.config import FloatEncoding
from bamql.errors import IngestError
from bamql.exactfloat import to_float64
from bamql.storage.arrownp import micros
from bamql.storage.decimals import DecimalScan, WideValue, encode, real_nans, unscaled, wide_unscaled
from bamql.storage.encoding import float_storage, narrow_int_dtype, sentinel_for
from bamql.storage.packing import packed_bits
from bamql.storage.sources import Source, select_columns
from bamql.storage.sqltypes import (
    BOOLEAN,
    DATE,
    MAX_PRECISION,
    TIMESTAMPTZ,
    WIDE_DTYPE,
    decimal_type,
)
from bamql.storage.writer import ColumnPlan

#: Strings are dictionary-coded (int8, int16 or int32 codes by the dictionary's size); the
#: dictionary lives in the manifest, read whole when a table opens, so its size is bounded.
MAX_DICTIONARY = 1 << 20


def _kind(t: pa.DataType) -> str | None:
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return "int"
    if pa.types.is_decimal(t):
        return "decimal"  # stored exactly: the unscaled integers, as kind int (``sql_type``)
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        return "float"
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return "timestamp"  # a DATE as its midnight's microseconds (``sqltypes.DATE``)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t):
        return "string"  # a column with no value at all (a CSV's empty one): VARCHAR, as DuckDB
    return None


def _family(t: pa.DataType) -> str:
    """What a source type may be widened with: types of one family unify; an integer and a
    float unify as a double; a column with no value at all (type null) unifies with any."""
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_timestamp(t):
        return "timestamptz" if t.tz is not None else "timestamp"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_null(t):
        return "null"
    return _kind(t) or str(t)


#: Digits of each integer type, as DuckDB widens it with a DECIMAL (BIGINT: DECIMAL(19,0)).
_INT_DIGITS = {8: 3, 16: 5, 32: 10, 64: 19}


def _as_decimal(t: pa.DataType) -> tuple[int, int]:
    """(precision, scale) of a decimal or integer type, as DuckDB unifies them."""
    if pa.types.is_decimal(t):
        return t.precision, t.scale
    return _INT_DIGITS[t.bit_width] + pa.types.is_unsigned_integer(t), 0


def _widen_decimal(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """The DECIMAL that holds a decimal and a decimal or integer type, as DuckDB's
    ``union_by_name`` makes it: the most integer digits and the most decimals of either."""
    (pa_, sa), (pb, sb) = _as_decimal(a), _as_decimal(b)
    s = max(sa, sb)
    return pa.decimal128(min(MAX_PRECISION, max(pa_ - sa, pb - sb) + s), s)


def _widen(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The type that holds values of both ``a`` and ``b`` (as DuckDB's
    ``union_by_name``: int32 and int64 -> int64, integer and double -> double, timestamp
    units -> microseconds), or None where none does (a string and an integer)."""
    if a == b:
        return a
    fa, fb = _family(a), _family(b)
    if fa == "null" or fb == "null":
        return b if fa == "null" else a
    if fa == fb == "int":
        return pa.int64()
    if {fa, fb} <= {"int", "decimal"}:  # a DECIMAL with an integer's digits
        return _widen_decimal(a, b)
    if {fa, fb} <= {"int", "float", "decimal"}:  # a DOUBLE with a DECIMAL: a DOUBLE
        return pa.float32() if pa.types.is_float32(a) and pa.types.is_float32(b) else pa.float64()
    if fa == fb == "date":  # date32 and date64: days
        return pa.date32()
    if {fa, fb} == {"date", "timestamp"}:  # DuckDB: a DATE is its midnight's TIMESTAMP
        return pa.timestamp("us")
    if {fa, fb} == {"timestamp", "timestamptz"}:  # DuckDB: TIMESTAMP WITH TIME ZONE, the
        return pa.timestamp("us", tz="UTC")  # naive one's wall time read as UTC
    if fa == fb and fa in ("timestamp", "timestamptz"):
        if fa == "timestamptz" and a.tz != b.tz:
            return pa.timestamp("us", tz="UTC")
        return pa.timestamp("us", tz=a.tz)
    if fa == fb == "string":
        return pa.large_string() if pa.types.is_large_string(a) else a
    return None


def unify_schemas(sources: Sequence[Source]) -> list[tuple[str, str, pa.DataType]]:
    """The columns of all sources together, matched by name as DuckDB's
    ``read_parquet(..., union_by_name=true)`` does: (name, kind, widest type) per column,
    in the order they first appear. A column some sources lack is NULL in their rows
    (``sources.FilledSource``); types that no type holds both of (a string and an
    integer) are a one-line error naming the column and the two files."""
    types: dict[str, pa.DataType] = {}
    first: dict[str, Source] = {}
    for s in sources:
        for f in s.schema:
            if _kind(f.type) is None:
                raise IngestError(
                    f"{s.path.name}: column {f.name!r} has type {f.type}, which bamql cannot "
                    "store (supported: integers, booleans, float32/64, decimals, dates, "
                    "timestamps, strings); leave it out with --columns"
                )
            if f.name not in types:
                types[f.name], first[f.name] = f.type, s
                continue
            t = _widen(types[f.name], f.type)
            if t is None:
                raise IngestError(
                    f"schemas disagree: column {f.name!r} is {types[f.name]} in "
                    f"{first[f.name].path.name} but {f.type} in {s.path.name}"
                )
            types[f.name] = t
    return [(n, _kind(t), t) for n, t in types.items()]


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


def column_plans(sources: Sequence[Source], cols, floats: FloatEncoding = FloatEncoding.AUTO,
                 scan_progress: Callable[[int], None] | None = None,
                 pack: bool = False) -> list[ColumnPlan]:
    """The storage of each unified column: integers narrowed to their range, floats scanned
    for scaled-integer decimals (``floats="auto"``; ``"decimals"``: only the columns that
    some source holds as DECIMAL), strings dictionary-coded (sorted, so
    code order is string order). Reads the sources' statistics, and scans what they lack.
    With ``pack``, integer-stored columns get the bit width of their stored range
    (``storage.packing``; timestamps' ranges cost a scan of them)."""
    stats = [s.int_stats() for s in sources]
    need_scan = [n for n, k, _ in cols if k in ("int", "string")
                 and (k == "string" or any(st.get(n) is None for st in stats))]
    types = {n: t for n, _, t in cols}
    decs = [n for n, k, _ in cols if k == "decimal"]  # their unscaled range, always scanned
    wide: set[str] = set()  # DECIMALs with a value no int64 holds: 16 bytes a value
    need_scan += decs
    stamps = [n for n, k, _ in cols if k == "timestamp"] if pack else []
    need_scan += stamps
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
                                f"{s.path.name}: column {n!r} has more than {MAX_DICTIONARY:,} "
                                "distinct strings, which bamql does not store (dictionary "
                                "codes); leave it out with --columns"
                            )
                    elif n in stamps:
                        _stored_range(a, n, lo, hi)
                    elif n in decs:
                        _unscaled_range(s.path.name, a, n, types[n], lo, hi, wide)
                    else:
                        mm = pc.min_max(a.cast(pa.int64()) if pa.types.is_boolean(a.type) else a)
                        if mm["min"].is_valid:
                            lo[n] = min(lo.get(n, mm["min"].as_py()), mm["min"].as_py())
                            hi[n] = max(hi.get(n, mm["max"].as_py()), mm["max"].as_py())
    doubles = [n for n, k, t in cols if k == "float" and pa.types.is_float64(t)]
    decimals = {n for n in doubles if any(
        n in s.schema.names and pa.types.is_decimal(s.schema.field(n).type) for s in sources)}
    if floats == FloatEncoding.DECIMALS:  # DuckDB's DECIMALs keep their exact rounding; doubles stay plain
        doubles = [n for n in doubles if n in decimals]
    scans = _scan_floats(sources, doubles, scan_progress) if floats != FloatEncoding.PLAIN and doubles else {}
    if scan_progress and not scans:  # nothing to check: that pass is done
        scan_progress(sum(s.num_rows for s in sources))
    plans = []
    for n, k, t in cols:
        if n in wide:  # a DECIMAL of more than 18 digits: Arrow's decimal128 bytes
            plans.append(ColumnPlan(n, "int", np.dtype(WIDE_DTYPE),
                                    sql_type=decimal_type(t.precision, t.scale)))
            continue
        if k in ("int", "decimal"):  # a DECIMAL as its unscaled integers, exactly
            a, b = lo.get(n, 0), hi.get(n, 0)  # an all-null column: any range will do
            sql = (decimal_type(t.precision, t.scale) if k == "decimal"
                   else BOOLEAN if pa.types.is_boolean(t) else None)
            plans.append(ColumnPlan(n, "int", narrow_int_dtype(a, b), a, b, sql_type=sql))
            k = "int"
        elif k == "float":
            enc = scans[n].encoding() if n in scans else None
            if enc is not None:
                plans.append(ColumnPlan(n, k, enc[1], scale=enc[0], decimal=n in decimals))
            else:
                plans.append(ColumnPlan(n, k, np.dtype(t.to_pandas_dtype()), decimal=n in decimals))
        elif k == "timestamp":  # instants of a source with a time zone: TIMESTAMPTZ
            sql = (DATE if pa.types.is_date(t)
                   else TIMESTAMPTZ if t.tz is not None else None)
            plans.append(ColumnPlan(n, k, np.dtype(np.int64), sql_type=sql))
        else:
            d = tuple(sorted(distinct[n]))  # sorted: code order is string order
            dt = narrow_int_dtype(0, max(len(d) - 1, 0))  # the minimum is NULL's code
            plans.append(ColumnPlan(n, k, dt, 0, max(len(d) - 1, 0), d))
        if pack:  # plain floats have no stored range: packed_bits leaves them plain
            pl = plans[-1]
            if k in ("int", "string"):
                r = (pl.lo, pl.hi)
            elif k == "timestamp":
                r = (lo.get(n), hi.get(n))
            else:
                r = _scaled_range(scans.get(n), pl.scale)
            pl.bits = packed_bits(*r, pl.dtype)
    return plans


def _unscaled(a: pa.Array, t: pa.DataType) -> tuple[np.ndarray, np.ndarray | None]:
    """Decimal (or integer) values ``a`` of a column of DECIMAL type ``t`` as int64 at its
    scale (``decimals.unscaled``); ValueError for a value that no int64 holds."""
    if pa.types.is_null(a.type):
        return np.zeros(len(a), np.int64), np.ones(len(a), bool)
    if pa.types.is_integer(a.type):  # a file whose column is an integer: exact at any scale
        try:
            a = a.cast(pa.decimal128(MAX_PRECISION, t.scale))
        except pa.ArrowInvalid:
            raise ValueError(f"an integer of the column has more than {MAX_PRECISION} "
                             f"digits at scale {t.scale}") from None
    return unscaled(a, t.scale)


def _decimal_error(n: str, t: pa.DataType, why: str) -> IngestError:
    return IngestError(f"column {n!r} is DECIMAL({t.precision},{t.scale}) and its {why}: "
                       f"bamql holds a DECIMAL exactly, to {MAX_PRECISION} digits, never "
                       "rounded; cast it to DOUBLE to have it rounded, or leave it out with "
                       "--columns")


def _unscaled_range(where: str, a: pa.Array, n: str, t: pa.DataType,
                    lo: dict[str, int], hi: dict[str, int], wide: set[str]) -> None:
    """Widen ``lo[n]``, ``hi[n]`` by the unscaled integers of decimals ``a`` (column ``n``
    of DECIMAL type ``t``); a value that no int64 holds puts ``n`` in ``wide`` (stored in
    16 bytes a value, of no recorded range), one of more than 38 digits is a one-line error."""
    if n in wide:
        try:
            wide_unscaled(a, t.scale)
        except ValueError as e:
            raise IngestError(f"{where}: {_decimal_error(n, t, str(e))}") from None
        return
    try:
        v, nulls = _unscaled(a, t)
    except WideValue:
        wide.add(n)
        _unscaled_range(where, a, n, t, lo, hi, wide)
        return
    except ValueError as e:
        raise IngestError(f"{where}: {_decimal_error(n, t, str(e))}") from None
    if nulls is not None:
        v = v[~nulls]
    if len(v):
        a_, b_ = int(v.min()), int(v.max())
        lo[n] = min(lo.get(n, a_), a_)
        hi[n] = max(hi.get(n, b_), b_)


def _stored_range(a: pa.Array, n: str, lo: dict[str, int], hi: dict[str, int]) -> None:
    """Widen ``lo[n]``, ``hi[n]`` by the stored values (int64 microseconds) of timestamps
    ``a``; those finer than microseconds are left to ``to_storage`` to refuse."""
    if pa.types.is_null(a.type):
        return
    try:
        us = micros(a)
    except pa.ArrowInvalid:
        return
    mm = pc.min_max(us)
    if mm["min"].is_valid:
        lo[n] = min(lo.get(n, mm["min"].as_py()), mm["min"].as_py())
        hi[n] = max(hi.get(n, mm["max"].as_py()), mm["max"].as_py())


def _scaled_range(scan: DecimalScan | None, scale: int) -> tuple[int | None, int | None]:
    """The stored range of a float column stored as scaled integers, from its scan (None
    bounds where it found no finite value)."""
    if scan is None or not scale or not (np.isfinite(scan.lo) and np.isfinite(scan.hi)):
        return None, None
    p = 10.0**scale
    return round(scan.lo * p), round(scan.hi * p)


#: the type a column of no values (Arrow's null type) is read as, per kind
_NULL_AS = {"int": pa.int64(), "float": pa.float64(), "timestamp": pa.timestamp("us"),
            "string": pa.string()}


def to_storage(a: pa.Array, pl: ColumnPlan) -> np.ndarray:
    """One batch's column ``a`` as stored under plan ``pl`` (NULLs as the sentinel)."""
    sent = sentinel_for(pl.dtype)
    if pa.types.is_null(a.type):  # a column with no value in this file
        a = pa.nulls(len(a), _NULL_AS[pl.kind])
    if pl.kind == "int" and pl.decimal_scale is not None and pl.dtype.kind == "V":
        try:  # a wide DECIMAL: Arrow's decimal128 bytes at its scale
            return wide_unscaled(a, pl.decimal_scale)
        except ValueError as e:
            raise IngestError(f"column {pl.name!r} ({pl.sql_type}): {e}") from None
    if pl.kind == "int" and pl.decimal_scale is not None:  # a DECIMAL: its unscaled integers
        try:
            v, nulls = _unscaled(a, pa.decimal128(MAX_PRECISION, pl.decimal_scale))
        except ValueError as e:
            raise IngestError(f"column {pl.name!r} ({pl.sql_type}): {e}") from None
        ok = v if nulls is None else v[~nulls]
        if len(ok) and (int(ok.min()) < pl.lo or int(ok.max()) > pl.hi):
            raise IngestError(f"column {pl.name!r}: values outside the range its scan gave")
        if nulls is not None:
            v[nulls] = sent
        return v.astype(pl.dtype)
    if pl.kind == "int":
        if pa.types.is_boolean(a.type):
            a = a.cast(pa.int8())
        mm = pc.min_max(a)
        if mm["min"].is_valid and (mm["min"].as_py() < pl.lo or mm["max"].as_py() > pl.hi):
            raise IngestError(f"column {pl.name!r}: values outside the range its statistics gave")
        if a.null_count:  # in int64: the stored dtype's sentinel may not fit the source's type
            a = a.cast(pa.int64()).fill_null(sent)
        return a.to_numpy(zero_copy_only=False).astype(pl.dtype)
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
        v = (to_float64(a) if pa.types.is_decimal(a.type) or pa.types.is_integer(a.type)
             else a.cast(pa.from_numpy_dtype(pl.dtype)).to_numpy(zero_copy_only=False))
        return float_storage(v, np.asarray(a.is_null()) if a.null_count else None, pl.dtype)
    if pl.kind == "timestamp":
        try:
            us = micros(a)
        except pa.ArrowInvalid as e:
            raise IngestError(f"column {pl.name!r}: timestamps finer than microseconds ({e})") from None
        return us.fill_null(sent).to_numpy(zero_copy_only=False)
    codes = pc.index_in(a, value_set=pa.array(pl.dictionary or (), type=a.type))
    return codes.fill_null(sent).to_numpy(zero_copy_only=False).astype(pl.dtype)
