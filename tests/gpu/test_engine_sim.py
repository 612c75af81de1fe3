"""The GPU engine in numba's CUDA simulator (runs in CI, no GPU needed): the generated query
kernels and the page cache on tiny tables, every query against the CPU engine.

The simulator has no warp intrinsics, so it runs the lane-by-lane stand-ins of the warp
read, the warp reduction and the queue fill (one staging page per thread); warp coalescing
is covered on a real GPU (``test_engine.py``). The ``file`` backend's reads go through the real
submission queue to the compiled host I/O workers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("numba.cuda")

SCRIPT = textwrap.dedent("""
    import sys, tempfile
    from pathlib import Path
    import bamql
    from bamql.datasets.generator import GenParams, generate_chunk
    from bamql.datasets.orc import write_orc
    from bamql.queries import all_queries, load
    from bamql.storage.ingest import ingest
    from tests.reference import assert_same_rows

    d = Path(tempfile.mkdtemp())
    t = generate_chunk(GenParams(rows=2500, seed=11, williamsburg_share=0.02), 0)
    write_orc([t], d / "t.orc")
    # scaled floats (int16 pages) and zstd stream copies, which the file backend streams from
    ingest([d / "t.orc"], d / "data" / "trips", page_size=512, compress="zstd")
    queries = all_queries()
    with bamql.connect(d / "data", device="cpu") as c:
        want = {n: c.sql(q).rows() for n, q in queries.items()}
    with bamql.connect(d / "data") as c:  # auto never picks the simulator
        assert c.device == "cpu", c.device
    for backend in ("gpu", "host", "file"):
        with bamql.connect(d / "data", device="gpu", backend=backend, cache="64KiB") as con:
            assert con.device == "gpu" and "simulator" in con.note
            for name, sql in queries.items():
                assert_same_rows(con.sql(sql).rows(), want[name], ordered="ORDER BY" in sql)
        print(backend, "every query ok")
    # the host backend's dependent columns go through the cache: a single slot, and a cache
    # larger than the working set (each page loaded once; a repeat reads nothing)
    q6 = load("q06")
    with bamql.connect(d / "data", device="gpu", backend="host", cache="512") as con:
        assert_same_rows(con.sql(q6).rows(), want["q06"], ordered=False)
    with bamql.connect(d / "data", device="gpu", backend="host", cache="1MiB") as con:
        st = con.sql(q6).stats
        # the simulator's events keep no time: none is reported, rather than its -1
        assert st.kernel_seconds > 0 and st.gpu_seconds == 0.0, (st.kernel_seconds, st.gpu_seconds)
        dep = [c for c in st.columns.values() if c.role == "dependent"]
        assert dep and all(c.path == "cache" and c.cache_misses > 0 for c in dep)
        assert st.rows_matched > 0
        again = con.sql(q6).stats
        assert again.bytes_read == 0, again.bytes_read
        assert all(c.cache_misses == 0 for c in again.columns.values())
    print("caches ok")
    # a repeated plan reuses its prepared launch; a column scanned whole is written through
    # to the GPU, and after a cache clear its buffer is reused, not allocated again
    full = "SELECT COUNT(*), AVG(total_amount) FROM trips WHERE trip_distance >= 0"
    with bamql.connect(d / "data", device="cpu") as c:
        want_full = c.sql(full).rows()
    with bamql.connect(d / "data", device="gpu", backend="host", cache="1MiB") as con:
        # (the first run may write its scanned column through: the second then reads the
        # GPU copy, with other arguments)
        for _ in range(2):
            assert_same_rows(con.sql(q6).rows(), want["q06"], ordered=False)
        ts = next(iter(con.gpu.tables.values()))
        before = dict(ts.launches)
        assert_same_rows(con.sql(q6).rows(), want["q06"], ordered=False)
        assert ts.launches == before  # the same prepared launch, not a new one
        for _ in range(2):
            assert_same_rows(con.sql(full).rows(), want_full, ordered=False)
        dev = ts.resident["trip_distance"]
        con.gpu.clear_cache()
        assert not ts.resident and ts.spare["trip_distance"] is dev
        assert all(not ln.volatile for ln in ts.launches.values())
        assert_same_rows(con.sql(full).rows(), want_full, ordered=False)
        assert ts.resident["trip_distance"] is dev and "trip_distance" not in ts.spare
    print("launches ok")
    # partitions of one table share each query's kernel: the first page of a cached column
    # is an argument, not a constant, so the source is the same and compiles once
    from bamql.gpu import kernel as kgpu

    ingest([d / "t.orc"], d / "parted" / "trips", page_size=512, partitions=3)
    with bamql.connect(d / "parted", device="gpu", backend="host", cache="1MiB") as con:
        kgpu._cache.clear()
        assert_same_rows(con.sql(q6).rows(), want["q06"], ordered=False)
        assert len(kgpu._cache) == 1, len(kgpu._cache)  # three partitions, one kernel
    print("partitions ok")
    # file backend, gathering (medium=cached): every miss is one read through the queue
    with bamql.connect(d / "data", device="gpu", backend="file", medium="cached",
                       cache="1MiB") as con:
        st = con.sql(q6).stats
        misses = sum(c.cache_misses for c in st.columns.values())
        assert misses > 0 and st.io_reads == misses, (misses, st.io_reads)
        assert_same_rows(con.sql(q6).rows(), want["q06"], ordered=False)
    # row groups: gathers of several columns through their interleaved copies (slow streams
    # make the planner gather on this tiny table, as it does at 200 M rows); the file backend
    # reads the groups' pages through the queue, the host backend the columns' own pages
    from bamql.physical.cost import MEDIA, Medium
    from bamql.queries import TAXI_QUERIES

    ingest([d / "t.orc"], d / "grouped" / "trips", page_size=512, groups="auto")
    MEDIA["file"] = Medium("file", 1e5, 1e5)
    for backend in ("file", "host"):
        with bamql.connect(d / "grouped", device="gpu", backend=backend, medium="file",
                           cache="1MiB") as con:
            assert "(row group)" in con.explain(q6)
            for name in TAXI_QUERIES:
                assert_same_rows(con.sql(load(name)).rows(), want[name], ordered=False)
                con.gpu.clear_cache()
            if backend == "file":  # a block read serves the same rows' other members
                st = con.sql(q6).stats
                misses = sum(c.cache_misses for c in st.columns.values() if c.role == "dependent")
                assert 0 < st.io_reads < misses, (st.io_reads, misses)
                print("row group: %d misses, %d reads" % (misses, st.io_reads))
    print("all ok")
""")


@pytest.mark.slow  # in CI's slow run; the default run keeps lighter simulator checks
def test_gpu_engine_in_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                       timeout=900, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert "all ok" in r.stdout


@pytest.mark.parametrize("wrap", [("", ""), ("\x1b[1m", "\x1b[0m")], ids=["plain", "coloured"])
def test_small_grid_warning_is_silenced_by_its_text(wrap):
    # numba-cuda raises its own NumbaPerformanceWarning class (not numba.core.errors'), so the
    # engine matches numba's small-grid warning by its text; other warnings still show. Where
    # colorama is installed (as on the GPU machine) numba wraps the text in terminal colours.
    errors = pytest.importorskip("numba.cuda.core.errors")
    import warnings

    from bamql.gpu.device import small_grid_ok

    def small(n: int) -> Warning:
        return errors.NumbaPerformanceWarning(
            f"{wrap[0]}Grid size {n} will likely result in GPU under-utilization due to low "
            f"occupancy.{wrap[1]}", highlighting=False)

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        with small_grid_ok():
            warnings.warn(small(1), stacklevel=1)
            warnings.warn(errors.NumbaPerformanceWarning("another performance warning"), stacklevel=1)
        warnings.warn(small(2), stacklevel=1)
    shown = [str(w.message) for w in got]
    assert shown[0] == "another performance warning"
    assert "Grid size 2 will likely" in shown[1] and len(shown) == 2


ROW_GROUPS_ON_SAMPLE = textwrap.dedent("""
    import sys, tempfile
    from pathlib import Path
    import bamql
    from bamql.storage.ingest import ingest
    from tests.conftest import SAMPLES
    from tests.reference import assert_same_rows

    d = Path(tempfile.mkdtemp())
    # the January sample's groups: seven 2-byte members (3.5 KiB of a 4 KiB block) and two
    # 4-byte ones (1 KiB of a 4 KiB block); a block's padding is no member's page
    ingest(SAMPLES[:1], d / "jan" / "trips", page_size=512, groups="auto")
    queries = [
        "SELECT COUNT(*) FROM trips WHERE fare_amount = 6.5",
        "SELECT MIN(improvement_surcharge), MAX(extra), SUM(mta_tax) FROM trips WHERE fare_amount < 0",
        "SELECT SUM(total_amount), MAX(tip_amount) FROM trips WHERE trip_distance > 20",
    ]
    with bamql.connect(d / "jan", device="cpu") as c:
        want = [c.sql(q).rows() for q in queries]
    with bamql.connect(d / "jan", device="gpu", backend="file", cache="64KiB") as con:
        for q, w in zip(queries, want):
            assert_same_rows(con.sql(q).rows(), w, ordered=False)
    print("all ok")
""")


@pytest.mark.slow
def test_file_backend_reads_row_groups_of_the_real_sample():
    # the host I/O workers checked block_bytes // page_size pages of a row group's block, not
    # its members' pages: the padding was hashed as the next group's page, a false "checksum
    # mismatch" (or a page "outside store") on the real sample
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", ROW_GROUPS_ON_SAMPLE], env=env, capture_output=True,
                       text=True, timeout=600,
                       cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert "all ok" in r.stdout
