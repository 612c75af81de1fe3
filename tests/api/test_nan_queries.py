"""NULL and NaN in float columns, query by query against DuckDB: NaN = NaN, NaN is larger
than every other value, COUNT(x) counts it, SUM/AVG give NaN, NaN IS NULL is false; a NULL
is none of these. On the CPU engine here and on the GPU kernels in numba's CUDA simulator."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.storage.ingest import ingest
from bamql.storage.store import PageStore
from tests.reference import assert_same_rows, duck

ROWS = 2048
GRID = [float("nan"), -np.inf, -1.0, 0.0, 1.5, np.inf, None]


def nan_table(rows: int = ROWS) -> pa.Table:
    """Floats with NULLs, NaNs (one of them negative) and infinities.

    ``x`` holds whole numbers 0..3 (scaled integers before NaN came in), its NaNs in only a
    few 512 B pages (zone maps must keep those pages for ``x > 5``); ``g`` = 3 rows have only
    NaN or NULL in ``x``; ``f`` is ``x`` as float32; ``w`` whole numbers with NULLs and no
    NaN (scaled integers); ``y`` cents with NULLs; ``a`` and ``b`` every pair of ``GRID``.
    """
    i = np.arange(rows)
    x = (i % 4).astype(np.float64)
    x[[1000, 1001, 1003, 1900]] = np.nan
    x[1002] = -np.nan
    x[1500], x[200] = np.inf, -np.inf
    g = i % 3
    g[2000:2010] = 3
    x[2000:2010] = np.nan
    x_null = (i % 13 == 0) | (i == 2005)
    w = (i % 50).astype(np.float64) * 7
    y = np.round((i % 997) * 1.37, 2)
    a = [GRID[k % 7] for k in range(rows)]
    b = [GRID[(k // 7) % 7] for k in range(rows)]
    return pa.table({
        "id": pa.array(i, pa.int64()),
        "g": pa.array(g, pa.int64()),
        "x": pa.array(x, mask=x_null),
        "f": pa.array(x.astype(np.float32), mask=x_null),
        "w": pa.array(w, mask=i % 7 == 0),
        "y": pa.array(y, mask=i % 11 == 0),
        "a": pa.array(a, pa.float64()),
        "b": pa.array(b, pa.float64()),
    })


QUERIES = [
    "SELECT COUNT(x), COUNT(*), SUM(x), AVG(x), MIN(x), MAX(x) FROM trips",
    "SELECT COUNT(f), SUM(f), AVG(f), MIN(f), MAX(f) FROM trips",
    "SELECT COUNT(w), SUM(w), AVG(w), MIN(w), MAX(w), COUNT(y), SUM(y), MIN(y), MAX(y) FROM trips",
    "SELECT g, COUNT(x), MIN(x), MAX(x), SUM(x), MIN(f), MAX(f) FROM trips GROUP BY g",
    "SELECT g, MAX(x) FROM trips GROUP BY g HAVING MAX(x) > 5",
    "SELECT g, MIN(x) FROM trips GROUP BY g HAVING MIN(x) = MIN(x) ORDER BY 2 DESC, 1",
    "SELECT COUNT(*), COUNT(x) FROM trips WHERE x IS NULL",
    "SELECT COUNT(*), COUNT(x) FROM trips WHERE x IS NOT NULL",
    "SELECT COUNT(*) FROM trips WHERE x > 5",
    "SELECT COUNT(*) FROM trips WHERE x >= 3",
    "SELECT COUNT(*) FROM trips WHERE x < 5",
    "SELECT COUNT(*) FROM trips WHERE x <= 1",
    "SELECT COUNT(*) FROM trips WHERE x = 1",
    "SELECT COUNT(*) FROM trips WHERE x <> 1",
    "SELECT COUNT(*) FROM trips WHERE x > 1e999",
    "SELECT COUNT(*) FROM trips WHERE x >= 1e999",
    "SELECT COUNT(*) FROM trips WHERE x < -1e999",
    "SELECT COUNT(*) FROM trips WHERE NOT (x > 2)",
    "SELECT COUNT(*) FROM trips WHERE x IN (1, 3)",
    "SELECT COUNT(*) FROM trips WHERE x NOT IN (1, 3)",
    "SELECT COUNT(*) FROM trips WHERE x BETWEEN 1 AND 2",
    "SELECT COUNT(*) FROM trips WHERE x + 1 > 3",
    "SELECT COUNT(*) FROM trips WHERE x = x",
    "SELECT COUNT(*) FROM trips WHERE f > 2",
    "SELECT COUNT(*), MAX(w) FROM trips WHERE w > 300",
    "SELECT COUNT(*) FROM trips WHERE a = b",
    "SELECT COUNT(*) FROM trips WHERE a <> b",
    "SELECT COUNT(*) FROM trips WHERE a < b",
    "SELECT COUNT(*) FROM trips WHERE a <= b",
    "SELECT COUNT(*) FROM trips WHERE a > b",
    "SELECT COUNT(*) FROM trips WHERE a >= b",
    "SELECT COUNT(*), MIN(a), MAX(a), SUM(b) FROM trips WHERE a > 0 OR b IS NULL",
    "SELECT g, COUNT(*) FROM trips WHERE x > 2 AND g <> 1 GROUP BY g",
    # x, f and a are dependent columns here: on the GPU they are read through the page cache
    "SELECT COUNT(x), SUM(x), MIN(x), MAX(x), MIN(f), MAX(f), MAX(a) FROM trips WHERE g = 2",
    "SELECT g, COUNT(x), MIN(x), MAX(x) FROM trips WHERE id >= 1000 GROUP BY g",
]
#: What the simulator also runs on the ``host`` backend (its cached reads of NaN and NULL).
HOST_QUERIES = QUERIES[-2:] + [QUERIES[0], QUERIES[3], QUERIES[8]]


@pytest.fixture(scope="module")
def nan_store(tmp_path_factory) -> tuple[Path, pa.Table]:
    d = tmp_path_factory.mktemp("nan")
    t = nan_table()
    pq.write_table(t, d / "t.parquet")
    ingest([d / "t.parquet"], d / "data" / "trips", page_size=512)
    return d / "data", t


def test_nan_columns_are_stored_as_floats_and_the_others_narrow(nan_store):
    data, t = nan_store
    with PageStore(data / "trips") as s:
        assert s.column("x").dtype == "float64" and s.column("x").scale == 0
        assert s.column("f").dtype == "float32"
        assert s.column("w").dtype == "int16" and s.column("w").scale == 1
        assert s.column("y").scale == 2
        for name in ("x", "f", "w", "y", "a", "b"):  # NULLs only, never a NaN
            assert s.column(name).nulls == t[name].null_count, name


@pytest.mark.parametrize("sql", QUERIES)
def test_float_nulls_and_nans_match_duckdb(nan_store, sql):
    data, t = nan_store
    with bamql.connect(data, device="cpu") as con:
        got = con.sql(sql).rows()
    assert_same_rows(got, duck(sql, t), ordered="ORDER BY" in sql)


def test_zone_maps_keep_the_pages_holding_a_nan(nan_store):
    data, t = nan_store
    with PageStore(data / "trips") as s:
        c = s.column("x")
        hi = s.pages.zmax[c.first_page : c.first_page + c.n_pages]
        nan_pages = sorted({r // c.rows_per_page for r in (1000, 1900, 2000)})
        assert np.isinf(hi[nan_pages]).all()  # a NaN is above every value: max +inf
    with bamql.connect(data, device="cpu") as con:
        r = con.sql("SELECT COUNT(*) FROM trips WHERE x > 5")
        assert r.rows() == duck("SELECT COUNT(*) FROM trips WHERE x > 5", t)
        # pruning still works: most pages hold nothing above 5
        assert r.stats.columns["x"].pages_read < c.n_pages


SIM = textwrap.dedent("""
    import sys, tempfile
    from pathlib import Path
    import pyarrow.parquet as pq
    import bamql
    from bamql.storage.ingest import ingest
    from tests.api.test_nan_queries import HOST_QUERIES, QUERIES, nan_table
    from tests.reference import assert_same_rows, duck

    d = Path(tempfile.mkdtemp())
    t = nan_table()
    pq.write_table(t, d / "t.parquet")
    ingest([d / "t.parquet"], d / "data" / "trips", page_size=512)
    for backend, queries in (("gpu", QUERIES), ("host", HOST_QUERIES)):
        with bamql.connect(d / "data", device="gpu", backend=backend, cache="64KiB") as con:
            assert "simulator" in con.note
            for sql in queries:
                assert_same_rows(con.sql(sql).rows(), duck(sql, t), ordered="ORDER BY" in sql)
        print(backend, "ok")
""")


@pytest.mark.slow  # in CI's slow run; the default run keeps lighter simulator checks
def test_float_nulls_and_nans_on_the_gpu_kernels_in_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", SIM], env=env, capture_output=True, text=True,
                       timeout=900, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "gpu ok" in r.stdout and "host ok" in r.stdout
