"""The ``file`` backend's streamed columns (plain pages, no compressed copy), in numba's CUDA
simulator: read through each thread's pinned staging into the column's buffer in GPU memory
and checked there (``gpu.pagecheck``), they answer as DuckDB does; a column made resident
leaves no second buffer behind; where the buffers have no room the column is read into a
mapped buffer instead, with the same answers; a damaged page is a one-line error."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("numba.cuda")

SCRIPT = textwrap.dedent("""
    import shutil
    import tempfile
    import warnings
    from pathlib import Path
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    import bamql
    from bamql.errors import StoreError
    from bamql.gpu import backends
    from bamql.storage import residency
    from bamql.storage.ingest import ingest
    from bamql.storage.store import PageStore
    from tests.reference import assert_same_rows, duck

    warnings.simplefilter("ignore", RuntimeWarning)  # the simulated hash's uint64 wrap-around
    residency.set_enabled(False)  # the disk's plans whatever the OS caches

    rng = np.random.default_rng(5)
    n = 12000
    t = pa.table({
        "k": pa.array(rng.integers(1, 266, n), pa.int64(), mask=rng.random(n) < 0.05),
        "f": pa.array(rng.integers(-500, 9000, n) / 100, pa.float64(), mask=rng.random(n) < 0.1),
        "w": pa.array(rng.integers(-5000, 3000, n), pa.int64()),
    })
    d = Path(tempfile.mkdtemp())
    pq.write_table(t, d / "t.parquet")
    ingest([d / "t.parquet"], d / "data" / "trips", page_size=512)
    queries = [
        "SELECT COUNT(*), SUM(w), MIN(f), MAX(f) FROM trips WHERE k > 20",
        "SELECT k, COUNT(*), SUM(w) FROM trips WHERE f < 30 GROUP BY k",
        "SELECT COUNT(*), SUM(f) FROM trips WHERE w BETWEEN 100 AND 400",
    ]
    want = {q: duck(q, t) for q in queries}

    def run(con):
        for q in queries:
            assert_same_rows(con.sql(q).rows(), want[q], ordered=False)
            assert_same_rows(con.sql(q).rows(), want[q], ordered=False)  # again: resident

    with bamql.connect(d / "data", device="gpu", backend="file") as con:
        assert "simulator" in con.note
        run(con)
        tb = next(iter(con.gpu.tables.values()))
        both = set(tb.resident) & set(tb.source.devcols)
        assert not both, f"columns held twice: {both}"
        assert tb.resident or tb.source.devcols, "no column read into GPU memory"
        con.gpu.clear_cache()
        assert not tb.source.devcols
        run(con)

    # no room for the buffers: every column through a mapped buffer, the same answers
    real = backends.FileBackend._device_column
    backends.FileBackend._device_column = lambda self, source, c, ps: None
    with bamql.connect(d / "data", device="gpu", backend="file", cache="16KiB") as con:
        run(con)
        tb = next(iter(con.gpu.tables.values()))
        assert not tb.source.devcols and tb.source.colbufs
    backends.FileBackend._device_column = real

    # a damaged page of a streamed column: its checksum, checked on the device, says so
    bad = d / "bad"
    shutil.copytree(d / "data", bad)
    with PageStore(bad / "trips") as s:
        c = s.column("w")
        at = (c.first_page + 3) * s.page_size + 17
    vol = bad / "trips" / "vol-000.bin"
    raw = bytearray(vol.read_bytes())
    raw[at] ^= 0x08
    vol.write_bytes(bytes(raw))
    with bamql.connect(bad, device="gpu", backend="file", cache="16KiB") as con:
        try:
            con.sql("SELECT COUNT(*), SUM(w) FROM trips WHERE w > -6000").rows()
        except StoreError as e:
            assert "checksum mismatch in column 'w'" in str(e) and "\\n" not in str(e), e
        else:
            raise AssertionError("a damaged page went unnoticed")
    print("all ok")
""")


def test_streamed_columns_on_the_simulated_gpu():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                       timeout=900, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert "all ok" in r.stdout
