"""Exact numbers as their nearest doubles: Arrow decimals and integers to float64, correctly
rounded (Arrow's own cast of a decimal is off by an ulp for about one value in seven). The
store's scaled-integer encoding (``storage.decimals``), the plan tree's arithmetic
(``plan.expr``) and registered tables' joins (``sql.joins``) read decimals through it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def to_float64(a: pa.Array) -> np.ndarray:
    """A float column's values as float64, NaN for null. Decimals of up to 18 digits become
    ``unscaled / 10**scale``, correctly rounded (Arrow's own cast is off by an ulp for about
    one value in seven, which would keep a decimal(10,2) column from its exact encoding);
    integers become the nearest double."""
    if pa.types.is_decimal(a.type) and a.type.precision <= 18 and a.type.bit_width == 128:
        # 128-bit little-endian two's complement; up to 18 digits the low word holds it all
        words = np.frombuffer(a.buffers()[1], dtype=np.int64)[2 * a.offset : 2 * (a.offset + len(a))]
        out = words[0::2].astype(np.float64) / 10.0**a.type.scale
        if a.null_count:
            out[np.asarray(a.is_null())] = np.nan
        return out
    # an integer beyond 2**53 (a file whose column is BIGINT where another's is DOUBLE) is
    # rounded to the nearest double, as SQL's CAST(BIGINT AS DOUBLE) does
    safe = not pa.types.is_integer(a.type)
    return a.cast(pa.float64(), safe=safe).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
