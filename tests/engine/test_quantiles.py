"""Exact quantiles beside the kernel (``engine.quantiles``) as DuckDB's: equal neighbours
are the answer as they are (two infinities, two -0.0s), not an interpolation between them."""

from __future__ import annotations

import math

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.storage.ingest import ingest

TABLE = pa.table({"g": [1, 1, 2, 2, 3, 3, 3, 4],
                  "f": [-math.inf, -math.inf, -0.0, -0.0, math.inf, math.inf, 1.0, None]})


@pytest.mark.parametrize("sql", [
    "SELECT g, MEDIAN(f) FROM r GROUP BY g ORDER BY g",
    "SELECT g, quantile_cont(f, 0.25), quantile_disc(f, 0.5) FROM r GROUP BY g ORDER BY g",
    "SELECT MEDIAN(f) FROM r WHERE g = 2",
])
def test_equal_neighbours_as_duckdb(tmp_path, sql):
    pq.write_table(TABLE, tmp_path / "r.parquet")
    ingest([str(tmp_path / "r.parquet")], tmp_path / "db" / "r")
    duck = duckdb.connect()
    duck.register("r", TABLE)
    with bamql.connect(tmp_path / "db", device="cpu") as con:
        got = con.sql(sql).rows()
    # repr tells -0.0 from 0.0 and keeps infinities apart
    assert [tuple(map(repr, r)) for r in got] == [tuple(map(repr, r)) for r in duck.sql(sql).fetchall()]
