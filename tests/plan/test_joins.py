"""The join operator's lookups (``plan.joins``): a table of positions for narrow integer
keys finds what Arrow's hash set finds; a side taken whole is not copied."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from bamql.plan.joins import DENSE_KEYS, _dense_index, _every


@pytest.mark.parametrize("build_type, probe_type", [
    (pa.int64(), pa.int64()), (pa.int16(), pa.int64()), (pa.int32(), pa.int8()),
    (pa.uint32(), pa.int64()), (pa.int64(), pa.uint16()),
])
def test_a_table_of_positions_finds_what_a_hash_set_finds(build_type, probe_type):
    rng = np.random.default_rng(3)
    lo = 0 if pa.types.is_unsigned_integer(build_type) else -60
    keys = rng.choice(np.arange(lo, 120), 70, replace=False)
    build = pa.array(keys).cast(build_type)
    plo = 0 if pa.types.is_unsigned_integer(probe_type) else -100
    phi = 127 if probe_type == pa.int8() else 200
    vals = rng.integers(plo, phi, 3000)
    probe = pa.array(vals, mask=rng.random(3000) < 0.1).cast(probe_type)
    got = _dense_index(build, probe)
    assert got is not None
    want = pc.index_in(probe.cast(pa.int64()), value_set=build.cast(pa.int64()))
    assert got.to_pylist() == want.to_pylist()


def test_keys_too_wide_apart_or_past_int64_take_the_hash_set():
    probe = pa.array([1, 2, 3], pa.int64())
    assert _dense_index(pa.array([0, DENSE_KEYS], pa.int64()), probe) is None
    assert _dense_index(pa.array([1, 2], pa.uint64()), probe) is None
    assert _dense_index(pa.array([1.0, 2.0]), pa.array([1.0])) is None
    assert _dense_index(pa.array([], pa.int64()), probe) is None


def test_every_row_in_order_is_told_from_any_other_take():
    assert _every(pa.array(np.arange(5)), 5)
    assert _every(pa.array([], pa.int64()), 0)
    assert not _every(pa.array([0, 1, 3, 3, 4]), 5)
    assert not _every(pa.array([0, 1, 2, 3]), 5)
    assert not _every(pa.array([0, 1, None, 3, 4]), 5)
    assert not _every(pa.array([1, 0, 2, 3, 4]), 5)
