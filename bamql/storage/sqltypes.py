"""The SQL types a store records beside a column's kind (``ColumnMeta.sql_type``): a DECIMAL(p, s)
held as its unscaled integers (kind ``int``: ``value = stored / 10**s``, exactly), a
BOOLEAN held as 0/1 integers, a TIMESTAMP WITH TIME ZONE (kind ``timestamp``: its
instants as UTC microseconds, as a naive one's) and a DATE (kind ``timestamp``: the
microseconds of its midnight, so that it compares, extracts and truncates as the TIMESTAMP
DuckDB promotes it to; it comes back as Arrow's ``date32``). Plain Python: the planner reads
it at every query."""

from __future__ import annotations

#: The SQL type of a column that a store holds as the unscaled integers of a DECIMAL(p, s)
#: (``ColumnMeta.sql_type``), and of a BOOLEAN held as 0/1 integers.
BOOLEAN = "BOOLEAN"
#: The SQL type of a timestamp column whose source has a time zone: DuckDB's TIMESTAMPTZ,
#: instants that come back in Arrow as ``timestamp[us, tz=TIME_ZONE]``
TIMESTAMPTZ = "TIMESTAMP WITH TIME ZONE"
#: The SQL type of a timestamp column holding dates (Arrow ``date32``/``date64``): each value
#: the microseconds of its midnight (a multiple of ``DAY_US``), returned as ``date32``
DATE = "DATE"
#: Microseconds in a day: a DATE's stored value over this is its days since 1970-01-01
DAY_US = 86_400_000_000
#: The time zone a TIMESTAMP WITH TIME ZONE comes back in (DuckDB's: the session's, which
#: bamql keeps at UTC; the instants are the same in any)
TIME_ZONE = "UTC"
#: Most digits of a DECIMAL (DuckDB's and Arrow's decimal128).
MAX_PRECISION = 38
#: Unscaled values below this in magnitude have at most 15 significant digits, which a double
#: holds exactly: distinct ones stay distinct and in order when decoded to doubles.
DOUBLE_EXACT = 10**15
#: The storage type of a DECIMAL column whose unscaled values do not all fit an int64 (more
#: than 18 digits): 16 bytes per value, Arrow's ``decimal128`` layout (two's complement,
#: little-endian: the low int64 half, then the high one). Its NULL is ``WIDE_NULL``.
WIDE_DTYPE = "V16"
#: The unscaled value a wide DECIMAL's NULL is stored as: -2**127, which no DECIMAL(38)
#: reaches (its values are below 10**38 < 2**127 in magnitude).
WIDE_NULL = -(2**127)


def decimal_type(precision: int, scale: int) -> str:
    """The ``sql_type`` of a DECIMAL(precision, scale) column."""
    return f"DECIMAL({precision},{scale})"


def parse_decimal(sql_type: str | None) -> tuple[int, int] | None:
    """``(precision, scale)`` of a ``sql_type`` that names a DECIMAL, else None."""
    if not isinstance(sql_type, str) or not sql_type.startswith("DECIMAL(") \
            or not sql_type.endswith(")"):
        return None
    p, _, s = sql_type[8:-1].partition(",")
    if not (p.isdigit() and s.isdigit()):
        return None
    p, s = int(p), int(s)
    return (p, s) if 1 <= p <= MAX_PRECISION and 0 <= s <= p else None
