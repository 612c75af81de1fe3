"""storage.arrownp: its buffers give what pyarrow's own conversions give."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from bamql.storage.arrownp import from_numpy, to_numpy

TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(), pa.uint64(),
         pa.float32(), pa.float64(), pa.bool_(), pa.timestamp("us")]


def values(t: pa.DataType, n: int, rng) -> np.ndarray:
    if t == pa.bool_():
        return rng.random(n) < 0.5
    if pa.types.is_timestamp(t):
        return rng.integers(-2**62, 2**62, n, dtype=np.int64)
    dtype = np.dtype(t.to_pandas_dtype())
    if dtype.kind == "f":
        v = rng.normal(0, 1e6, n).astype(dtype)
        v[::7] = np.nan  # NaN is a value, not a null
        return v
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("t", TYPES, ids=str)
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 100])
@pytest.mark.parametrize("nulls", ["none", "some", "all"])
def test_from_numpy_is_pa_array(t, n, nulls):
    rng = np.random.default_rng(n)
    v = values(t, n, rng)
    ok = {"none": np.ones(n, bool), "all": np.zeros(n, bool), "some": rng.random(n) < 0.6}[nulls]
    got, want = from_numpy(v, ok, t), pa.array(v, mask=~ok, type=t)
    got.validate(full=True)
    assert got.type == want.type and got.null_count == want.null_count
    assert got.is_null().equals(want.is_null())
    # NaN is equal to NaN here (Arrow's equals says no)
    np.testing.assert_array_equal(got.to_numpy(zero_copy_only=False),
                                  want.to_numpy(zero_copy_only=False))
    if not pa.types.is_floating(t):
        assert got.equals(want)


@pytest.mark.parametrize("t", TYPES, ids=str)
@pytest.mark.parametrize("start, stop", [(0, 0), (0, 100), (3, 3), (3, 50), (9, 100), (13, 14)])
def test_to_numpy_is_pyarrows(t, start, stop):
    rng = np.random.default_rng(stop)
    a = pa.array(values(t, 100, rng), type=t).slice(start, stop - start)  # offsets, not bytes
    got, want = to_numpy(a), a.to_numpy(zero_copy_only=False)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_to_numpy_with_nulls_is_pyarrows():
    a = pa.array([1, None, 3], pa.int64())
    np.testing.assert_array_equal(to_numpy(a), a.to_numpy(zero_copy_only=False))
    v = pa.array([True, None, False]).is_valid()
    np.testing.assert_array_equal(to_numpy(v), [True, False, True])


def test_from_numpy_of_another_dtype_converts_as_pyarrow_does():
    v, ok = np.array([1.5, 2.0]), np.array([True, False])
    assert from_numpy(v.astype(np.int32), ok, pa.int64()).equals(
        pa.array(v.astype(np.int32), mask=~ok, type=pa.int64()))
