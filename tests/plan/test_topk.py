"""Each partition's k-th value from the rows of each (partition, value) pair
(``plan.topk.count_thresholds``), against sorting the rows themselves."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from bamql.plan.topk import count_thresholds


@pytest.mark.parametrize("desc", [False, True])
@pytest.mark.parametrize("nulls_first", [False, True])
@pytest.mark.parametrize("k", [1, 3, 50])
def test_kth_values_from_counts_as_from_the_rows(desc, nulls_first, k):
    rng = np.random.default_rng(k)
    n = 4000
    part = rng.integers(0, 30, n).astype(float)
    part[rng.random(n) < 0.03] = np.nan  # NULL keys
    val = rng.integers(-20, 20, n).astype(float)
    val[rng.random(n) < 0.05] = np.nan  # NULL values
    pairs, rows = np.unique(np.stack([np.nan_to_num(part, nan=-1), np.nan_to_num(val, nan=99)]),
                            axis=1, return_counts=True)
    p = pa.array(pairs[0], mask=pairs[0] == -1).cast(pa.int64())
    v = pa.array(pairs[1], mask=pairs[1] == 99).cast(pa.int64())
    keys, values = count_thresholds(p, v, rows, k, desc, nulls_first)
    got = dict(zip(keys.to_pylist(), values.to_pylist(), strict=True))
    for key in range(30):
        x = val[part == key]
        nulls, vals = x[np.isnan(x)], np.sort(x[~np.isnan(x)])
        vals = vals[::-1] if desc else vals
        ordered = [*([None] * len(nulls)), *vals] if nulls_first else [*vals, *([None] * len(nulls))]
        want = ordered[k - 1] if len(ordered) >= k else None
        assert got.get(key) == want, (key, got.get(key), want)
