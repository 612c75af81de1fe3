"""Schema unification across source files (``storage.columnplans.unify_schemas``)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bamql.errors import IngestError
from bamql.storage.columnplans import unify_schemas
from bamql.storage.sources import open_source


def _unify(tmp_path, *tables):
    srcs = []
    for i, t in enumerate(tables):
        pq.write_table(t, tmp_path / f"f{i}.parquet")
        srcs.append(open_source(tmp_path / f"f{i}.parquet"))
    return {n: (k, t) for n, k, t in unify_schemas(srcs)}


@pytest.mark.parametrize("a, b, kind, want", [
    (pa.int32(), pa.int64(), "int", pa.int64()),
    (pa.int8(), pa.int16(), "int", pa.int64()),
    (pa.int64(), pa.float64(), "float", pa.float64()),
    (pa.float32(), pa.int32(), "float", pa.float64()),
    (pa.float32(), pa.float32(), "float", pa.float32()),
    (pa.decimal128(10, 2), pa.int64(), "decimal", pa.decimal128(21, 2)),  # as DuckDB
    (pa.decimal128(18, 4), pa.decimal128(10, 6), "decimal", pa.decimal128(20, 6)),
    (pa.decimal128(10, 2), pa.float64(), "float", pa.float64()),
    (pa.timestamp("ms"), pa.timestamp("us"), "timestamp", pa.timestamp("us")),
    (pa.timestamp("s", tz="UTC"), pa.timestamp("us", tz="UTC"), "timestamp",
     pa.timestamp("us", tz="UTC")),
    (pa.null(), pa.string(), "string", pa.string()),
    (pa.null(), pa.int32(), "int", pa.int32()),
])
def test_compatible_types_widen(tmp_path, a, b, kind, want):
    got = _unify(tmp_path, pa.table({"x": pa.nulls(1, a)}), pa.table({"x": pa.nulls(1, b)}))
    assert got["x"] == (kind, want)


def test_columns_are_the_union_in_order_of_first_appearance(tmp_path):
    got = _unify(tmp_path, pa.table({"a": [1], "c": ["x"]}), pa.table({"b": [1.0], "a": [2]}))
    assert list(got) == ["a", "c", "b"]


def test_a_string_and_an_integer_are_one_line_naming_both_files(tmp_path):
    with pytest.raises(IngestError, match=r"column 'x' is int64 in f0.parquet but string in "
                                          r"f1.parquet"):
        _unify(tmp_path, pa.table({"x": [1]}), pa.table({"x": ["1"]}))
