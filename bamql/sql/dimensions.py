"""Dimension tables: small in-memory tables (registered, the zones, a stored table read whole)
that a join looks up inside the fact table's fused kernel, with their columns' metadata."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from bamql.errors import PlanError
from bamql.storage.arrownp import micros, to_numpy
from bamql.storage.format import ColumnMeta
from bamql.storage.sqltypes import DATE, TIME_ZONE, TIMESTAMPTZ


@dataclass(frozen=True, eq=False)
class Dimension:
    """A registered dimension table: each column as ``(values, valid)`` NumPy arrays (a
    string column as codes into its sorted dictionary) and its ``ColumnMeta``."""

    name: str
    table: pa.Table = field(repr=False)
    values: Mapping[str, tuple[np.ndarray, np.ndarray]] = field(repr=False)
    metas: Mapping[str, ColumnMeta] = field(repr=False)
    #: its DECIMAL columns (read as doubles here) -> (their type, whether some value has
    #: more significant digits than a double holds)
    decimals: Mapping[str, tuple[str, bool]] = field(default_factory=dict, repr=False)

    @property
    def rows(self) -> int:
        return self.table.num_rows

    def column(self, name: str) -> str | None:
        """The column called ``name``, matched without regard to case as DuckDB does."""
        if name in self.metas:
            return name
        low = [c for c in self.metas if c.lower() == name.lower()]
        return low[0] if len(low) == 1 else None


def _zero_nulls(a: pa.Array) -> pa.Array:
    """``a`` with its nulls as 0 (``fill_null`` makes a scalar, and pyarrow's scalars import
    pandas: a column without nulls is kept as it is)."""
    return a.fill_null(0) if a.null_count else a


def _is_string_view(t: pa.DataType) -> bool:
    return getattr(pa.types, "is_string_view", lambda _: False)(t)


def dimension(name: str, data) -> Dimension:
    """A dimension table from a pyarrow Table, a pandas or polars DataFrame, or anything
    with ``__arrow_c_stream__``. Integers, booleans (as integers, as a store keeps them),
    floats, decimals (as doubles, as a store keeps them), dates, timestamps and strings of every
    Arrow layout are read; a column of another type (lists, structs, ...) refuses the
    table in one line naming it, rather than leaving the column out unseen."""
    try:
        table = data if isinstance(data, pa.Table) else pa.table(data)
    except (TypeError, ValueError, pa.ArrowException) as e:
        raise PlanError(f"cannot register {type(data).__name__} as table {name!r}: "
                        f"{str(e).splitlines()[0] if str(e) else 'not a table'}") from None
    values: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    metas: dict[str, ColumnMeta] = {}
    decimals: dict[str, tuple[str, bool]] = {}
    for cname, col in zip(table.column_names, table.columns, strict=True):
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        t = col.type
        if pa.types.is_dictionary(t):
            col, t = col.cast(t.value_type), t.value_type
        if _is_string_view(t):
            col, t = col.cast(pa.string()), pa.string()
            table = table.set_column(table.column_names.index(cname), cname, col)
        if pa.types.is_timestamp(t) and t.tz is not None and t.tz != TIME_ZONE:
            # the same instants, in the zone every TIMESTAMP WITH TIME ZONE comes back in
            col, t = col.cast(pa.timestamp(t.unit, TIME_ZONE)), pa.timestamp(t.unit, TIME_ZONE)
            table = table.set_column(table.column_names.index(cname), cname, col)
        if pa.types.is_date64(t):  # days, as DuckDB reads a date64 (milliseconds truncated)
            col, t = col.cast(pa.date32(), safe=False), pa.date32()
            table = table.set_column(table.column_names.index(cname), cname, col)
        if pa.types.is_boolean(t):
            col, t = col.cast(pa.int64()), pa.int64()
        if pa.types.is_decimal(t):
            from bamql.exactfloat import to_float64  # correctly rounded, as a store's

            decimals[cname] = (f"DECIMAL({t.precision},{t.scale})", _wide_decimal(col))
            v = to_float64(col)
            col = pa.array(v, pa.float64(), mask=np.isnan(v) if col.null_count else None)
            t = pa.float64()
        valid = to_numpy(col.is_valid())
        if pa.types.is_integer(t):
            try:
                kind, v = "int", to_numpy(_zero_nulls(col).cast(pa.int64()))
            except pa.ArrowInvalid:  # a UBIGINT past BIGINT's range
                raise PlanError(f"cannot register table {name!r}: column {cname!r} holds "
                                f"a {t} value past BIGINT's range (up to {2**63 - 1}); cast "
                                "it or leave it out") from None
        elif pa.types.is_floating(t):
            kind, v = "float", to_numpy(_zero_nulls(col).cast(pa.float64()))
        elif pa.types.is_timestamp(t):
            kind, v = "timestamp", to_numpy(_zero_nulls(col.cast(pa.timestamp("us")).cast(pa.int64())))
        elif pa.types.is_date(t):  # a DATE as its midnight's microseconds, as a store keeps it
            kind, v = "timestamp", to_numpy(_zero_nulls(micros(col)))
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            strs = col.to_pylist()
            dictionary = tuple(sorted({s for s in strs if s is not None}))
            code = {s: i for i, s in enumerate(dictionary)}
            kind, v = "string", np.array([code.get(s, 0) for s in strs], np.int64)
        else:
            raise PlanError(f"cannot register table {name!r}: column {cname!r} is of type {t}, "
                            "which bamql does not read (integers, booleans, floats, decimals, "
                            "dates, timestamps and strings); cast it or leave it out")
        ok = v[valid]
        lo = hi = None
        if kind in ("int", "timestamp") and len(ok):
            lo, hi = int(ok.min()), int(ok.max())
        zoned = pa.types.is_timestamp(t) and t.tz is not None  # a TIMESTAMP WITH TIME ZONE
        metas[cname] = ColumnMeta(cname, kind, "float64" if kind == "float" else "int64", 0, 0, 1,
                                  nulls=int((~valid).sum()), min=lo, max=hi,
                                  dictionary=dictionary if kind == "string" else None,
                                  sql_type=TIMESTAMPTZ if zoned
                                  else DATE if pa.types.is_date(t) else None)
        values[cname] = (v, valid)
    return Dimension(name, table, values, metas, decimals)


def _wide_decimal(a: pa.Array) -> bool:
    """Whether decimals ``a`` hold a value of more than 15 significant digits (or more than
    an int64 holds unscaled), which its double rounds."""
    from bamql.storage.decimals import unscaled
    from bamql.storage.sqltypes import DOUBLE_EXACT

    try:
        v, _ = unscaled(a, a.type.scale)
    except ValueError:
        return True
    return bool(len(v)) and int(np.abs(v).max()) >= DOUBLE_EXACT
