"""Bit-packed stores (``storage.packing``) through the GPU template in numba's CUDA
simulator: codes of 3 to 42 bits decoded in scanned columns, in cache slots (a cache of 16
pages, so slots are evicted and refilled) and in streamed pages, against the CPU engine and
DuckDB, with NULLs in every column; the same queries over the Parquet file read in place,
whose per-query tables leave the GPU as the session drops them."""

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
    from bamql.storage.ingest import ingest
    from bamql.storage.store import PageStore
    from tests.reference import assert_same_rows, duck

    rng = np.random.default_rng(11)
    n = 3000
    t = pa.table({
        "k": pa.array(rng.integers(1, 266, n), pa.int64(), mask=rng.random(n) < 0.05),
        "w": pa.array(rng.integers(-5000, 3000, n), pa.int64(), mask=rng.random(n) < 0.1),
        "big": pa.array(rng.integers(-(1 << 40), 1 << 40, n), pa.int64(), mask=rng.random(n) < 0.1),
        "f": pa.array(rng.integers(-500, 9000, n) / 100, pa.float64(), mask=rng.random(n) < 0.1),
        "s": pa.array(rng.choice(["a", "bb", "ccc", "dd", "e"], n), mask=rng.random(n) < 0.1),
        "ts": pa.array((1546300800_000000 + rng.integers(0, 86400_000000 * 30, n))
                       .astype("datetime64[us]"), pa.timestamp("us"), mask=rng.random(n) < 0.05),
    })
    d = Path(tempfile.mkdtemp())
    pq.write_table(t, d / "t.parquet")
    ingest([d / "t.parquet"], d / "data" / "trips", page_size=512, pack=True)
    with PageStore(d / "data" / "trips") as st:
        bits = {c.name: c.bits for c in st.manifest.columns}
    assert bits == {"k": 9, "w": 13, "big": 41, "f": 14, "s": 3, "ts": 42}, bits
    queries = [
        "SELECT k, COUNT(*), SUM(w), MIN(big), MAX(big), AVG(f) FROM trips WHERE w > 100 GROUP BY k",
        "SELECT COUNT(*), SUM(w), MIN(ts), MAX(ts), SUM(big) FROM trips WHERE k IN (3, 77, 200, 265)",
        "SELECT s, COUNT(*), SUM(k) FROM trips WHERE f > 25 AND big < 0 GROUP BY s",
        "SELECT COUNT(*), COUNT(w), COUNT(big), COUNT(k), SUM(f) FROM trips "
        "WHERE ts > TIMESTAMP '2019-01-15' AND w < 0",
        "SELECT COUNT(*) FROM trips WHERE k IS NULL OR w IS NULL",
        "SELECT k, SUM(w) FROM trips WHERE k BETWEEN 100 AND 110 GROUP BY k",
    ]
    with bamql.connect(d / "data", device="cpu") as c:
        cpu = [c.sql(q).rows() for q in queries]
    for q, want in zip(queries, cpu):
        assert_same_rows(want, duck(q, t), ordered=False)
    with bamql.connect(d / "data", device="gpu", backend=sys.argv[1], cache="8KiB") as con:
        assert "simulator" in con.note
        for _ in range(2):  # the second pass reads resident copies and cached pages
            for q, want in zip(queries, cpu):
                assert_same_rows(con.sql(q).rows(), want, ordered=False)
        # the file read in place: each query's read is a table on the GPU until the session
        # drops it (it keeps the last IN_PLACE_KEPT), and its GPU table goes with it
        from bamql.api.file_tables import IN_PLACE_KEPT
        for q, want in zip(queries, cpu):
            got = con.sql(q.replace("FROM trips", f"FROM '{d / 't.parquet'}'")).rows()
            assert_same_rows(got, want, ordered=False)
            assert len(con.gpu.tables) <= 1 + IN_PLACE_KEPT, len(con.gpu.tables)
    print("all ok")
""")


# in CI's slow run; the default run checks packed pages on the
# CPU engine (tests/exec/test_fetch.py)
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["host", "file", "gpu"])
def test_packed_pages_in_the_simulated_gpu_kernel(backend):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", SCRIPT, backend], env=env, capture_output=True,
                       text=True, timeout=600,
                       cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert "all ok" in r.stdout
