"""Fixed-width values between NumPy and Arrow, through the arrays' buffers.

pyarrow's own conversions (``Array.to_numpy``, ``pa.array`` of an ndarray) import pandas
when it is installed, which costs a one-shot query over a page store a third of a second
it otherwise never spends; these read and write the buffers and give the same arrays.
Anything else (nulls to read, strings, nested types) goes through pyarrow's conversions.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

#: the Arrow types whose values buffer is a plain NumPy array of this dtype
_NUMPY = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
          pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32,
          pa.uint64(): np.uint64, pa.float32(): np.float32, pa.float64(): np.float64}


def to_numpy(a: pa.Array) -> np.ndarray:
    """The values of ``a`` as NumPy, as ``a.to_numpy(zero_copy_only=False)`` gives them: read
    from the buffers for integers, floats and booleans without nulls (integers and floats
    as a read-only view)."""
    if a.null_count == 0 and (a.type == pa.bool_() or a.type in _NUMPY):
        n, off = len(a), a.offset
        if n == 0:
            return np.empty(0, bool if a.type == pa.bool_() else _NUMPY[a.type])
        data = np.frombuffer(a.buffers()[1], np.uint8)
        if a.type == pa.bool_():  # one bit per value, least significant first
            return np.unpackbits(data, count=off + n, bitorder="little")[off:].astype(bool)
        return data.view(_NUMPY[a.type])[off : off + n]
    return a.to_numpy(zero_copy_only=False)


def from_numpy(v: np.ndarray, ok: np.ndarray, type: pa.DataType) -> pa.Array:
    """``v`` as an Arrow array of ``type``, null where ``ok`` is False: what
    ``pa.array(v, mask=~ok, type=type)`` gives, written as buffers for booleans, for
    integers and floats whose NumPy dtype ``v`` has, and for timestamps from int64."""
    n = len(v)
    if type == pa.bool_():
        data = pa.py_buffer(np.packbits(v.astype(bool), bitorder="little"))
    elif v.dtype == _NUMPY.get(type) or (pa.types.is_timestamp(type) and v.dtype == np.int64):
        data = pa.py_buffer(np.ascontiguousarray(v))
    else:
        return pa.array(v, mask=~ok, type=type)
    nulls = n - int(np.count_nonzero(ok))
    valid = pa.py_buffer(np.packbits(ok.astype(bool), bitorder="little")) if nulls else None
    return pa.Array.from_buffers(type, n, [valid, data], null_count=nulls)


def micros(a: pa.Array) -> pa.Array:
    """Timestamps or dates ``a`` as int64 microseconds since the epoch (a date: its
    midnight's, as a store keeps a DATE, ``sqltypes.DATE``); ArrowInvalid for timestamps
    finer than microseconds."""
    import pyarrow.compute as pc

    from bamql.storage.sqltypes import DAY_US

    if pa.types.is_date(a.type):  # days (a date64's milliseconds truncated, as DuckDB reads them)
        days = a.cast(pa.date32(), safe=False).cast(pa.int32()).cast(pa.int64())
        return pc.multiply(days, pa.scalar(DAY_US, pa.int64()))
    return a.cast(pa.timestamp("us", tz=a.type.tz)).cast(pa.int64())


class _NoPandas:
    """A finder that refuses ``import pandas`` (``without_pandas``)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("this bamql command runs without pandas", name=name)
        return None


def without_pandas() -> None:
    """Have this process run as where pandas is not installed, which bamql supports (pandas
    is no dependency of it): pyarrow imports pandas, when it can, to check whether a value
    it converts is a pandas object (``pa.array`` of a list, ``pa.scalar``, a CSV column to
    NumPy, each a third of a second on the 2-core VM), never to convert anything else. For
    a process that holds no pandas object and hands none out: the CLI's ``bamql sql`` and
    ``bamql shell``. Nothing where pandas is imported already."""
    import sys

    if "pandas" not in sys.modules and _NoPandas not in sys.meta_path:
        sys.meta_path.insert(0, _NoPandas)
