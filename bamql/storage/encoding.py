"""How column values are stored: the NULL sentinels, float storage and integer widths.

Nulls are stored in-band as a sentinel (the storage type's minimum for integers,
timestamps, dictionary codes and scaled floats), not as a validity bitmap: a gather then
costs one page per value instead of two, which is what late materialization is for. A
float64 or float32 column's NULL is one NaN bit pattern (``NULL_F64_BITS``,
``NULL_F32_BITS``: a quiet NaN with a payload) and a real NaN is stored as the canonical
NaN, so the two stay apart. A column holding real NaNs is never stored as scaled integers,
and a scaled column has at least one decimal (``scale >= 1``): ``scale`` 0 always means
"stored as is".
"""

from __future__ import annotations

import numpy as np

from bamql.errors import StoreError

#: The NULL of a float64 / float32 column: a quiet NaN with a payload ("NULL" in ASCII) that
#: ingest never stores for a value (real NaNs are stored as the canonical NaN).
NULL_F64_BITS = 0x7FF8_0000_4E55_4C4C
NULL_F32_BITS = 0x7FC0_4E55


def sentinel_for(dtype: np.dtype):
    """The null sentinel of a storage dtype: for floats the NaN of bits ``NULL_F64_BITS`` /
    ``NULL_F32_BITS`` (a NumPy scalar of the dtype, which keeps the bits), for integers the
    minimum, for a wide DECIMAL's 16-byte values -2**127 (``sqltypes.WIDE_NULL``)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        bits = np.array([_null_bits(dtype)], dtype=_bits_dtype(dtype))
        return bits.view(dtype)[0]
    if dtype.kind == "V":  # a wide DECIMAL's 16 bytes (``sqltypes.WIDE_DTYPE``): -2**127
        return np.array([0, np.iinfo(np.int64).min], np.int64).view(dtype)[0]
    return int(np.iinfo(dtype).min)


def _bits_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.int64) if np.dtype(dtype).itemsize == 8 else np.dtype(np.int32)


def _null_bits(dtype: np.dtype) -> int:
    if np.dtype(dtype) not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise StoreError(f"float storage type {np.dtype(dtype)} is not supported (float32/64)")
    return NULL_F64_BITS if np.dtype(dtype).itemsize == 8 else NULL_F32_BITS


def null_mask(values: np.ndarray) -> np.ndarray:
    """Where stored ``values`` are NULL: the NULL bit pattern for floats (a real NaN is not
    NULL), the sentinel otherwise."""
    if values.dtype.kind == "f":
        return values.view(_bits_dtype(values.dtype)) == _null_bits(values.dtype)
    return values == sentinel_for(values.dtype)


def float_storage(values: np.ndarray, nulls: np.ndarray | None, dtype: np.dtype) -> np.ndarray:
    """Float ``values`` as stored (a new array of ``dtype``): every NaN made the canonical NaN
    and the rows where ``nulls`` is true (a boolean mask, or None) the NULL bit pattern."""
    out = np.array(values, dtype=dtype, copy=True)
    out[np.isnan(out)] = np.nan  # any sign or payload: the canonical quiet NaN
    if nulls is not None and nulls.any():
        out.view(_bits_dtype(dtype))[nulls] = _null_bits(dtype)
    return out


def narrow_int_dtype(lo: int, hi: int) -> np.dtype:
    """Smallest signed integer dtype holding ``[lo, hi]`` with its minimum kept for null."""
    for dt in (np.int8, np.int16, np.int32, np.int64):
        info = np.iinfo(dt)
        if info.min < lo and hi <= info.max:
            return np.dtype(dt)
    raise StoreError(f"integer range [{lo}, {hi}] does not fit int64 with a null sentinel")
