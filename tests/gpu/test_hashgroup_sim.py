"""GROUP BY keys with no dense range (a float, a timestamp, a large integer range, several
such keys, NULL, NaN and -0.0 among them) grouped in the GPU kernel's hash table
(``gpu.hashgroup``), in numba's CUDA simulator (CI, no GPU): against DuckDB and the CPU
engine on a tiny table, a table small enough to overflow and be retried larger, and
partitions whose groups merge by key."""

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
    from bamql.gpu import hashgroup
    from bamql.fused import domains
    from bamql.gpu.device import SIMULATOR as simulated
    from bamql.gpu import kernel as kgpu
    from bamql.storage.ingest import ingest
    from tests.reference import assert_same_rows, duck

    rng = np.random.default_rng(7)
    n, first, backends = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")
    ts = rng.integers(0, 5, n) * 3_600_000_000 * 24 * 400 + rng.integers(0, 3, n)
    x = rng.choice([0.5, -0.0, 0.0, np.nan, 1e300, -7.25, 3.0], n)
    t = pa.table({
        "x": pa.array(x, pa.float64(), mask=rng.random(n) < 0.1),
        "ts": pa.array(ts, pa.timestamp("us"), mask=rng.random(n) < 0.1),
        "big": pa.array(rng.choice([-(1 << 62), 5, 1 << 61, 7], n), pa.int64(),
                        mask=rng.random(n) < 0.1),
        "k": pa.array(rng.integers(1, 4, n), pa.int64()),
        "i": pa.array(rng.integers(-(1 << 62), 1 << 62, n), pa.int64(), mask=rng.random(n) < 0.1),
        "f": pa.array(rng.normal(10.0, 3.0, n), pa.float64(), mask=rng.random(n) < 0.1),
    })
    d = Path(tempfile.mkdtemp())
    pq.write_table(t, d / "t.parquet")
    ingest([d / "t.parquet"], d / "data" / "trips", page_size=512)
    if "parts" in backends:
        ingest([d / "t.parquet"], d / "parts" / "trips", page_size=512, partitions=3)
    queries = [
        "SELECT x, COUNT(*), SUM(i), MIN(f), MAX(f), AVG(f) FROM trips GROUP BY x ORDER BY x",
        "SELECT ts, COUNT(*), COUNT(f), MIN(i), MAX(i) FROM trips GROUP BY ts ORDER BY ts",
        "SELECT big, x, COUNT(*), SUM(k), STDDEV(f), VAR_POP(f) FROM trips WHERE k > 1 "
        "GROUP BY big, x ORDER BY big, x",
        "SELECT f, COUNT(*) FROM trips GROUP BY f ORDER BY f",
        "SELECT x, COUNT(*) FILTER (WHERE k = 2), SUM(f) FROM trips WHERE f > 100 GROUP BY x "
        "ORDER BY x",
        # dense keys beside a hashed one: k and a condition with f's groups, ts with x's
        "SELECT k, f, COUNT(*), MAX(i) FROM trips GROUP BY k, f ORDER BY k, f",
        "SELECT i > 0 AS pos, ts, x, COUNT(*), SUM(f) FROM trips GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
        "SELECT x, k, AVG(f), MIN(ts) FROM trips WHERE k <> 2 GROUP BY x, k ORDER BY x, k",
    ]
    with bamql.connect(d / "data", device="cpu") as c:
        cpu = [c.sql(q).rows() for q in queries]
    sources = []
    orig = kgpu.compile_kernel
    kgpu.compile_kernel = lambda src: sources.append(src) or orig(src)
    domains.FIRST_TABLE = first  # f's groups (about one a row) overflow the first table: retries
    runs = [("parts", "host") if b == "parts" else ("data", b) for b in backends if b != "blocks"]
    for store, backend in runs:
        with bamql.connect(d / store, device="gpu", backend=backend, cache="64KiB") as con:
            assert ("simulator" in con.note) == simulated
            for q, want in zip(queries, cpu):
                got = con.sql(q).rows()
                assert_same_rows(got, duck(q, t), ordered=True)
                assert_same_rows(got, want, ordered=True)
            plan = " ".join(str(r[0]) for r in con.sql("EXPLAIN " + queries[0]).rows())
            assert "on the GPU, in the fused kernel's hash table" in plan, plan
    # blocks' own tables of 64 slots, one probe: most rows of f's groups go to the global
    # table beside them (gl), and the blocks' tables merge into it
    if "blocks" in backends:
        from bamql.gpu import groupacc
        groupacc.SHARED_BUDGET, hashgroup.SHARED_PROBES = 6000, 1
        with bamql.connect(d / "data", device="gpu", backend="host", cache="64KiB") as con:
            for q, want in zip(queries, cpu):
                assert_same_rows(con.sql(q).rows(), want, ordered=True)
        assert any("cuda.atomic.cas(shk" in s and "cuda.shared.array(64," in s for s in sources), \
            "no kernel kept a block's table"
    assert any("cuda.atomic.cas(HS" in s for s in sources), "no kernel hashed several keys"
    assert any("gd = g" in s for s in sources), "no kernel kept dense keys beside a hashed one"
    print("all ok")
""")


#: what a run covers: the ``data`` store on each backend, the ``parts`` store (3 partitions)
#: on the host backend, and ``blocks``: blocks' own tables merged into the global one
ALL = ("host", "gpu", "file", "parts", "blocks")


def _run(env: dict, rows: int, first: int, backends: tuple[str, ...] = ALL) -> None:
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(rows), str(first), ",".join(backends)], env=env,
                       capture_output=True, text=True, timeout=900,
                       cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert "all ok" in r.stdout


@pytest.mark.slow  # in CI's slow run; the default run hashes groups in the simulator in
def test_hashed_groups_in_the_simulator():  # tests/exec/test_runner.py's GPU workers
    """The host backend; the kernels are the same on every backend, which differ in how
    pages reach the card (the other two, partitions and blocks' tables: the slow run)."""
    _run(dict(os.environ, NUMBA_ENABLE_CUDASIM="1"), 500, 16, ("host",))


@pytest.mark.slow  # in CI's slow run
def test_hashed_groups_of_partitions_and_blocks_tables_in_the_simulator():
    _run(dict(os.environ, NUMBA_ENABLE_CUDASIM="1"), 500, 16, ("parts", "blocks"))


@pytest.mark.slow  # in CI's slow run
def test_hashed_groups_on_the_gpu_and_file_backends_in_the_simulator():
    _run(dict(os.environ, NUMBA_ENABLE_CUDASIM="1"), 500, 16, ("gpu", "file"))


@pytest.mark.gpu
def test_hashed_groups_on_the_gpu():
    """The same on a GPU: 200,000 rows, the float key's groups past the first tables."""
    from bamql.api.session import gpu_unavailable_reason

    if gpu_unavailable_reason() is not None:
        pytest.skip(f"no GPU: {gpu_unavailable_reason()}")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    _run(env, 200_000, 1 << 10)
