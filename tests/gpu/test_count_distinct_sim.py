"""COUNT(DISTINCT) through the GPU template in numba's CUDA simulator (the kernel groups by
the counted column as well; the host regroups), against DuckDB and the CPU engine on a tiny
table with NULLs: grouped, ungrouped, with FILTER and with no matching rows."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("numba.cuda")

SCRIPT = textwrap.dedent("""
    import tempfile
    from pathlib import Path
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    import bamql
    from bamql.storage.ingest import ingest
    from tests.reference import assert_same_rows, duck

    rng = np.random.default_rng(11)
    n = 300
    t = pa.table({
        "k": pa.array(rng.integers(0, 3, n), pa.int64(), mask=rng.random(n) < 0.1),
        "c": pa.array(rng.integers(-4, 5, n), pa.int64(), mask=rng.random(n) < 0.2),
        "x": pa.array(rng.normal(10.0, 3.0, n), pa.float64(), mask=rng.random(n) < 0.1),
    })
    d = Path(tempfile.mkdtemp())
    pq.write_table(t, d / "t.parquet")
    ingest([d / "t.parquet"], d / "data" / "trips", page_size=512)
    queries = [
        "SELECT k, COUNT(DISTINCT c), COUNT(DISTINCT c) FILTER (WHERE x > 10), SUM(x), "
        "STDDEV(x), COUNT(*) FROM trips GROUP BY k",
        "SELECT COUNT(DISTINCT c), MIN(x), AVG(c) FROM trips WHERE k = 1",
        "SELECT COUNT(DISTINCT c), SUM(x) FROM trips WHERE x > 1000",
    ]
    with bamql.connect(d / "data", device="cpu") as c:
        cpu = [c.sql(q).rows() for q in queries]
    with bamql.connect(d / "data", device="gpu", backend="host", cache="64KiB") as con:
        assert "simulator" in con.note
        for q, want in zip(queries, cpu):
            got = con.sql(q).rows()
            assert_same_rows(got, duck(q, t), ordered=False)
            assert_same_rows(got, want, ordered=False)
    print("all ok")
""")


@pytest.mark.slow  # in CI's slow run; the default run keeps lighter simulator checks
def test_count_distinct_in_the_simulated_gpu_kernel():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                       timeout=600, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert "all ok" in r.stdout
