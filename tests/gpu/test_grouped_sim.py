"""Grouped GPU kernels in numba's CUDA simulator (CI, no GPU): dense keys that are
expressions (EXTRACT(year), ROUND of a decimal column, integer arithmetic), the fewest groups
through each thread's own accumulators, few through each block's shared-memory copy and
many through global atomics, against
DuckDB and the CPU engine on a tiny table with NULL keys."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("numba.cuda")

SCRIPT = textwrap.dedent("""
    import sys
    import tempfile
    from pathlib import Path
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    import bamql
    from bamql.gpu import kernel as kgpu
    from bamql.storage.ingest import ingest
    from tests.reference import assert_same_rows, duck

    rng = np.random.default_rng(5)
    n = 600
    ts = rng.integers(-3 * 365 * 86400, 40 * 365 * 86400, n) * 1_000_000
    t = pa.table({
        "k": pa.array(rng.integers(1, 4, n), pa.int64(), mask=rng.random(n) < 0.1),
        "wide": pa.array(rng.integers(0, 9000, n), pa.int64()),
        "ts": pa.array(ts, pa.timestamp("us"), mask=rng.random(n) < 0.1),
        "d": pa.array(np.round(rng.uniform(-20, 60, n), 2), pa.float64(), mask=rng.random(n) < 0.1),
        "x": pa.array(rng.normal(10.0, 3.0, n), pa.float64(), mask=rng.random(n) < 0.1),
        "i": pa.array(rng.integers(-50, 50, n), pa.int64(), mask=rng.random(n) < 0.1),
    })
    d = Path(tempfile.mkdtemp())
    pq.write_table(t, d / "t.parquet")
    ingest([d / "t.parquet"], d / "data" / "trips", page_size=512)
    queries = [
        # the fewest: each thread's own accumulators
        "SELECT k, COUNT(*), SUM(i), MIN(x), MAX(x) FROM trips GROUP BY k",
        # few groups: each block's shared-memory copy, every accumulator kind
        "SELECT k, COUNT(*), COUNT(x), SUM(i), AVG(x), MIN(x), MAX(i), MIN(i), MAX(x), SUM(x) "
        "FROM trips GROUP BY k",
        "SELECT k, extract(year FROM ts) AS y, COUNT(*), AVG(i) FROM trips GROUP BY k, y",
        "SELECT round(d) AS r, k, COUNT(*) FILTER (WHERE x > 10), STDDEV(x) FROM trips "
        "GROUP BY r, k ORDER BY r, k",
        "SELECT CAST(d AS INTEGER) + k AS s, COUNT(*) FROM trips WHERE i > 0 GROUP BY s",
        # many groups: past the shared-memory budget, global atomics
        "SELECT wide, COUNT(*), SUM(i), MIN(x), AVG(d) FROM trips GROUP BY wide",
        "SELECT wide, k, COUNT(*) FROM trips WHERE i > 1000 GROUP BY wide, k",
    ]
    with bamql.connect(d / "data", device="cpu") as c:
        cpu = [c.sql(q).rows() for q in queries]
    sources = []
    orig = kgpu.compile_kernel
    kgpu.compile_kernel = lambda src: sources.append(src) or orig(src)
    for backend in sys.argv[1].split(","):
        with bamql.connect(d / "data", device="gpu", backend=backend, cache="64KiB") as con:
            assert "simulator" in con.note
            for q, want in zip(queries, cpu):
                got = con.sql(q).rows()
                assert_same_rows(got, duck(q, t), ordered="ORDER BY" in q)
                assert_same_rows(got, want, ordered="ORDER BY" in q)
    assert any("cuda.local.array" in s and "tl_R" in s for s in sources), "no thread-own accumulators"
    assert any("cuda.shared.array" in s and "tl_R" not in s for s in sources), "no shared-only ones"
    assert any("cuda.atomic.add(R, (0, g), 1)" in s for s in sources), "no kernel took global ones"
    print("all ok")
""")


@pytest.mark.parametrize("backend", ["host", pytest.param("gpu", marks=pytest.mark.slow)])
def test_grouped_kernels_in_the_simulator(backend):
    """The kernels are the same on both backends, which differ in how pages reach the card
    (the gpu backend: the slow run)."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", SCRIPT, backend], env=env, capture_output=True, text=True,
                       timeout=600, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert "all ok" in r.stdout


def test_few_groups_take_shared_memory_and_many_do_not():
    from bamql.fused import ir
    from bamql.gpu import groupacc
    cnt = ir.Agg("count", None, "int")
    s = ir.Agg("sum", ir.Col("x", "float"), "float")
    assert groupacc.fits_shared(3, (cnt, s)) and groupacc.fits_threads(3, (cnt, s))
    assert groupacc.private_arrays((cnt,)) == 1  # COUNT(*) is the row count
    assert groupacc.private_arrays((cnt, s)) == 3  # the row count, SUM's count and sum
    assert groupacc.fits_shared(265, (cnt, s)) and not groupacc.fits_threads(265, (cnt, s))
    assert not groupacc.fits_shared(70_000, (cnt,))
