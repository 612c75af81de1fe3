"""GPU engine tests: run on a machine with a CUDA GPU (marker ``gpu``), skipped elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import bamql
from bamql.api.session import gpu_unavailable_reason
from bamql.queries import all_queries, load
from tests.reference import assert_same_rows

REASON = gpu_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(REASON is not None, reason=f"no GPU: {REASON}")]
QUERIES = all_queries()


@pytest.fixture(scope="module")
def stores(tmp_path_factory, taxi_orc):
    from bamql.storage.ingest import ingest

    d = tmp_path_factory.mktemp("gpu")
    out = {}
    for ps in (512, 4096, 65536):
        ingest(taxi_orc, d / f"p{ps}" / "trips", page_size=ps)
        out[ps] = d / f"p{ps}"
    return out


@pytest.fixture(scope="module")
def packed_store(tmp_path_factory, taxi_orc):
    """The trips bit-packed (``ingest(pack=True)``) in 512 B pages: codes straddle words."""
    from bamql.storage.ingest import ingest

    d = tmp_path_factory.mktemp("packed")
    ingest(taxi_orc, d / "trips", page_size=512, pack=True)
    return d


@pytest.fixture(scope="module")
def cpu_answers(stores):
    with bamql.connect(stores[4096], device="cpu") as c:
        return {n: c.sql(q).rows() for n, q in QUERIES.items()}


@pytest.mark.parametrize("backend", ["host", "gpu", "file"])
@pytest.mark.parametrize("page_size", [512, 4096, 65536])
def test_every_query_matches_the_cpu_engine(stores, cpu_answers, backend, page_size):
    with bamql.connect(stores[page_size], device="gpu", backend=backend, cache="64MiB") as con:
        assert con.device == "gpu"
        for name, sql in QUERIES.items():
            assert_same_rows(con.sql(sql).rows(), cpu_answers[name], ordered="ORDER BY" in sql)
            if backend == "file":
                con.gpu.clear_cache()  # every query reads from the files again


@pytest.mark.parametrize("backend", ["host", "gpu", "file"])
def test_packed_stores_match_the_cpu_engine(packed_store, cpu_answers, backend):
    # the kernel decodes codes in scanned columns and in cache slots (warp_read_packed)
    from bamql.storage.store import PageStore

    with PageStore(packed_store / "trips") as st:
        assert sum(c.bits > 0 for c in st.manifest.columns) >= 5
    with bamql.connect(packed_store, device="gpu", backend=backend, cache="64KiB") as con:
        for _ in range(2):  # the second pass reads resident copies and cached pages
            for name, sql in QUERIES.items():
                assert_same_rows(con.sql(sql).rows(), cpu_answers[name], ordered="ORDER BY" in sql)


def test_file_backend_gathers_through_the_queue(stores, cpu_answers):
    sql = QUERIES["q06"]
    # medium=cached: the planner gathers the dependent columns (a cold disk would stream them)
    with bamql.connect(stores[4096], device="gpu", backend="file", medium="cached",
                       cache="256MiB") as con:
        st = con.sql(sql).stats
        misses = sum(c.cache_misses for c in st.columns.values())
        assert misses > 0 and st.io_reads == misses  # every miss was one queued read
        assert 1 <= st.io_depth <= misses
        assert_same_rows(con.sql(sql).rows(), cpu_answers["q06"], ordered=False)
        text = "\n".join(con.sql("EXPLAIN ANALYZE " + sql).to_arrow()["explain"].to_pylist())
        assert "GPU-initiated reads" not in text  # third run: all in GPU memory, no reads
    with bamql.connect(stores[512], device="gpu", backend="file", cache="256MiB") as con:
        # the default (queue) medium: whatever it picks must be right, run after run
        for _ in range(2):
            assert_same_rows(con.sql(sql).rows(), cpu_answers["q06"], ordered=False)


def test_file_backend_read_errors_are_one_line_and_the_session_survives(stores, tmp_path):
    import shutil

    from bamql.storage.format import volume_name
    from bamql.storage.store import PageStore

    data = tmp_path / "bad"
    shutil.copytree(stores[4096], data)
    with PageStore(data / "trips") as s:
        c = s.column("tip_amount")
        vol = data / "trips" / volume_name(c.first_page % s.manifest.n_volumes)
        pos = (c.first_page // s.manifest.n_volumes) * s.page_size
    with open(vol, "r+b") as f:  # flip one byte of the column's first page
        f.seek(pos + 7)
        b = f.read(1)
        f.seek(pos + 7)
        f.write(bytes([b[0] ^ 0xFF]))
    with bamql.connect(data, device="gpu", backend="file", medium="cached") as con:
        with pytest.raises(bamql.StoreError, match="checksum|corrupt"):
            con.sql("SELECT SUM(tip_amount) FROM trips")
        # the queue was reset: the next query runs and is right
        want = bamql.connect(stores[4096], device="cpu").sql(QUERIES["q01"]).rows()
        assert_same_rows(con.sql(QUERIES["q01"]).rows(), want, ordered=False)


def test_matches_duckdb_too(stores, taxi_orc):
    pytest.importorskip("duckdb")
    from tests.conftest import read_orc
    from tests.reference import duck

    t = read_orc(taxi_orc)
    with bamql.connect(stores[4096], device="gpu") as con:
        for name in ("q01", "q06", "q08", "q14", "q18"):
            sql = QUERIES[name]
            assert_same_rows(con.sql(sql).rows(), duck(sql, t), ordered="ORDER BY" in sql)


@pytest.mark.parametrize("backend", ["host", "gpu", "file"])
def test_constants_are_arguments_and_wide_predicates_are_programs(stores, taxi_orc, backend):
    pytest.importorskip("duckdb")
    import random

    from bamql.gpu import kernel as kgpu
    from bamql.kernels.codegen import SHORT_IN
    from tests.conftest import read_orc
    from tests.reference import duck

    t = read_orc(taxi_orc)
    rnd = random.Random(backend)
    with bamql.connect(stores[512], device="gpu", backend=backend, cache="1MiB") as con:
        shape = ("SELECT COUNT(*), AVG(tip_amount), MIN(total_amount - {c}) FROM trips "
                 "WHERE fare_amount > {x} AND pickup_location_id IN ({ids})")
        before = kgpu.kernel_cache_size()
        orders = set()
        for _ in range(12):
            ids = [rnd.randint(1, 265) for _ in range(rnd.randint(1, 300))]
            sql = shape.format(c=rnd.randint(-5, 5), x=round(rnd.uniform(0, 40), 2),
                               ids=", ".join(map(str, ids)))
            assert_same_rows(con.sql(sql).rows(), duck(sql, t), ordered=False)
            plan = con.plan(con._translate(sql))
            orders.add((tuple(s.columns for s in plan.stages),
                        tuple((a.column, a.path, a.shadow) for a in plan.access),
                        min(len(set(ids)), SHORT_IN + 1)))
        # one kernel per plan shape (the order of the filter's stages and each column's access
        # path, which selectivity estimates decide, and the length of an IN list of up to
        # SHORT_IN values, which compiles to compares), not one per constant
        assert kgpu.kernel_cache_size() - before <= len(orders)
        for n in (20, 200):
            terms = " OR ".join(f"(fare_amount > {round(rnd.uniform(5, 90), 2)} AND tip_amount < "
                                f"{round(rnd.uniform(0, 4), 2)} AND passenger_count <> {rnd.randint(0, 6)})"
                                for _ in range(n))
            sql = f"SELECT COUNT(*), SUM(trip_distance) FROM trips WHERE {terms}"
            assert_same_rows(con.sql(sql).rows(), duck(sql, t), ordered=False)


def test_no_page_loaded_twice_and_second_run_fetches_nothing(stores):
    sql = load("q06")
    with bamql.connect(stores[4096], device="cpu", medium="cached") as cpu:
        want = {c: cpu.sql(sql).stats.columns[c] for c in ("trip_distance", "mta_tax")}
        assert all(w.path == "gather" for w in want.values())
    with bamql.connect(stores[4096], device="gpu", backend="host", cache="256MiB") as con:
        first = con.sql(sql).stats
        for c, w in want.items():
            # cache larger than the working set: misses == distinct pages touched
            assert first.columns[c].cache_misses == w.pages_read, c
        second = con.sql(sql).stats
        assert second.bytes_read == 0  # everything hit in GPU memory
        assert all(col.cache_misses == 0 for col in second.columns.values())
        assert second.columns["trip_distance"].cache_hits > 0


STRESS = """
import pickle, sys, bamql
from bamql.queries import all_queries
from tests.reference import assert_same_rows
data, cache, expect = sys.argv[1], int(sys.argv[2]), pickle.load(open(sys.argv[3], "rb"))
with bamql.connect(data, device="gpu", backend=sys.argv[4], cache=cache) as con:
    for name, sql in all_queries().items():
        assert_same_rows(con.sql(sql).rows(), expect[name], ordered="ORDER BY" in sql)
print("stress ok")
"""


@pytest.mark.parametrize("backend", ["host", "file"])
@pytest.mark.parametrize("slots", ["one-per-sm", "one-percent"])
def test_tiny_caches_give_right_answers_without_hanging(stores, cpu_answers, tmp_path, slots, backend):
    from numba import cuda

    from bamql.storage.store import PageStore

    ps = 4096
    if slots == "one-per-sm":
        cache = cuda.get_current_device().MULTIPROCESSOR_COUNT * ps
    else:
        with PageStore(stores[ps] / "trips") as s:
            cache = max(ps, s.manifest.total_pages * ps // 100)
    with bamql.connect(stores[ps], device="gpu", backend=backend, cache=cache, medium="cached") as con:
        for name in ("q01", "q06", "q09", "q14", "q18"):
            sql = QUERIES[name]
            assert_same_rows(con.sql(sql).rows(), cpu_answers[name], ordered="ORDER BY" in sql)
    # and all queries in a child process under a timeout: a hang fails instead of blocking
    import pickle

    exp = tmp_path / "expect.pkl"
    exp.write_bytes(pickle.dumps(cpu_answers))
    r = subprocess.run([sys.executable, "-c", STRESS, str(stores[ps]), str(cache), str(exp), backend],
                       capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert r.returncode == 0 and "stress ok" in r.stdout, r.stderr[-2000:]


PRESSURE_QUERIES = [
    "SELECT payment_type, COUNT(*) FROM trips GROUP BY payment_type ORDER BY 2 DESC",
    "SELECT EXTRACT(HOUR FROM pickup_datetime) AS h, COUNT(*), AVG(trip_distance) FROM trips "
    "GROUP BY 1 ORDER BY 1",
    "SELECT vendor_id, MIN(pickup_datetime), MAX(dropoff_datetime) FROM trips GROUP BY vendor_id",
    "SELECT SUM(fare_amount + tip_amount) FROM trips WHERE trip_distance > 10 AND passenger_count >= 2",
]


@pytest.fixture(scope="module", params=["plain", "packed"])
def pressure_store(tmp_path_factory, request):
    """2 M trips in 512 B pages with row groups (plain and bit-packed): every query's working
    set is thousands of pages, far more than the few-slot caches below."""
    from bamql.datasets.generator import GenParams, generate_chunk
    from bamql.datasets.orc import write_orc
    from bamql.storage.ingest import ingest

    d = tmp_path_factory.mktemp("pressure")
    t = generate_chunk(GenParams(rows=2_000_000, seed=3, williamsburg_share=0.002), 0)
    write_orc([t], d / "t.orc")
    ingest([d / "t.orc"], d / "data" / "trips", page_size=512, groups="auto",
           pack=request.param == "packed")
    return d / "data", t


@pytest.mark.parametrize("backend", ["host", "file", "gpu"])
@pytest.mark.parametrize("cache", ["16KiB", "256KiB"])
def test_caches_far_smaller_than_the_working_set_answer_right(pressure_store, backend, cache):
    # a reader's slot load was still in flight when its reference was dropped: an evictor
    # refilled the slot under it (counts off by tens, timestamps in year 6554) before the fence
    from tests.reference import duck

    data, table = pressure_store
    with bamql.connect(data, device="gpu", backend=backend, cache=cache) as con:
        for _ in range(3):
            for sql in PRESSURE_QUERIES:
                assert_same_rows(con.sql(sql).rows(), duck(sql, table), ordered="ORDER BY" in sql)


def test_limits_are_clear_errors(stores, monkeypatch):
    from numba import cuda

    # a cache is capped at the table's pages, so a small table always fits: the GPU is made
    # to report 1 MiB free instead
    ctx = type(cuda.current_context())
    real = ctx.get_memory_info
    with bamql.connect(stores[4096], device="gpu", backend="host", cache="64MiB") as con:
        monkeypatch.setattr(ctx, "get_memory_info", lambda self: (1 << 20, real(self)[1]))
        with pytest.raises(bamql.DeviceError, match="GiB of GPU memory"):
            con.sql(QUERIES["q01"])
        monkeypatch.undo()
    with pytest.raises(bamql.DeviceError, match="backend must be one of"):
        bamql.connect(stores[4096], device="gpu", backend="tape")


def test_auto_picks_the_gpu(stores):
    with bamql.connect(stores[4096]) as con:
        assert con.device == "gpu" and con.note == ""
        r = con.sql("EXPLAIN ANALYZE " + QUERIES["q06"])
        text = "\n".join(r.to_arrow()["explain"].to_pylist())
        assert "cache" in text and "hits" in text


def test_cache_survives_between_queries_and_clear_empties_it(stores):
    with bamql.connect(stores[4096], device="gpu", backend="host") as con:
        con.sql(QUERIES["q02"])
        st = con.sql(QUERIES["q02"]).stats
        assert st.bytes_read == 0
        con.gpu.clear_cache()
        st = con.sql(QUERIES["q02"]).stats
        assert st.bytes_read > 0
        assert np.isfinite(con.sql(QUERIES["q01"]).rows()[0][0])


@pytest.mark.parametrize("backend", ["file", "host"])
def test_row_group_gathers_match_the_cpu_engine(tmp_path, taxi_orc, cpu_answers, monkeypatch, backend):
    """Gathers through row groups (file backend: GPU-initiated reads of the groups' pages);
    the host backend holds no group pages and must read the columns' own pages instead."""
    from bamql.physical.cost import MEDIA, Medium
    from bamql.storage.ingest import ingest

    ingest(taxi_orc, tmp_path / "trips", page_size=512, groups="auto")
    # slow streams: on this small table the planner then gathers, as at 200 M rows
    monkeypatch.setitem(MEDIA, "file", Medium("file", 1e5, 1e5))
    with bamql.connect(tmp_path, device="gpu", backend=backend, medium="file", cache="64MiB") as con:
        text = con.explain(QUERIES["q06"])
        assert "(row group)" in text
        for name, sql in QUERIES.items():
            assert_same_rows(con.sql(sql).rows(), cpu_answers[name], ordered="ORDER BY" in sql)
            con.gpu.clear_cache()
        if backend == "file":
            st = con.sql(QUERIES["q06"]).stats
            misses = sum(c.cache_misses for c in st.columns.values())
            # a read brings a group's whole block; the warp copies the same rows' other
            # members from its staging buffer without a read of their own
            assert 0 < st.io_reads < misses, (st.io_reads, misses)


@pytest.mark.parametrize("backend", ["host", "gpu"])
def test_value_set_pruning_matches_the_cpu_engine(tmp_path_factory, backend):
    """0.1% in Williamsburg at 512 B pages: value sets leave thousands of short ranges, and the
    kernel finds each candidate's row through the chunk table instead of a search."""
    from bamql.datasets.generator import GenParams, generate_chunk
    from bamql.datasets.orc import write_orc
    from bamql.storage.ingest import ingest

    d = tmp_path_factory.mktemp("rare")
    write_orc([generate_chunk(GenParams(rows=400_000, seed=13, williamsburg_share=0.001), 0)],
              d / "t.orc")
    ingest([d / "t.orc"], d / "data" / "trips", page_size=512)
    with bamql.connect(d / "data", device="cpu") as c:
        want = {n: c.sql(q).rows() for n, q in QUERIES.items()}
    with bamql.connect(d / "data", device="gpu", backend=backend, cache="64MiB") as con:
        plan = con.plan(con._translate(QUERIES["q01"]))
        assert len(plan.ranges) > 100 and plan.ranges.chunk_rows(32) is not None
        for name, sql in QUERIES.items():
            assert_same_rows(con.sql(sql).rows(), want[name], ordered="ORDER BY" in sql)


def _from_another_thread(con, sql: str) -> dict:
    """Clear the cache, then run ``sql`` twice, on a new thread: its rows or its error."""
    import threading

    out: dict = {}

    def other() -> None:
        try:
            con.gpu.clear_cache()
            out["rows"] = [con.sql(sql).rows() for _ in range(2)]
        except Exception as e:  # re-raised by the caller
            out["error"] = e

    th = threading.Thread(target=other)
    th.start()
    th.join(timeout=300)
    return out


def test_queries_and_cache_clears_from_other_threads(stores, cpu_answers):
    # a Dask worker runs quick queries on its event loop's thread and clears caches from
    # another: the prepared launch and the memsets call the driver without numba's checks
    for backend in ("host", "gpu"):
        with bamql.connect(stores[4096], device="gpu", backend=backend) as con:
            sql = QUERIES["q06"]
            first = con.sql(sql).rows()
            out = _from_another_thread(con, sql)
            assert "error" not in out, out.get("error")
            for rows in (first, *out["rows"]):
                assert_same_rows(rows, cpu_answers["q06"], ordered=False)


def test_int32_string_codes_joins_and_registered_tables_on_the_gpu(tmp_path):
    """Strings of more than 32,767 distinct values (int32 codes), a join with the zone table
    and a registered table, on every backend, against DuckDB."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bamql.storage.ingest import ingest

    rng = np.random.default_rng(5)
    n = 120_000
    t = pa.table({"s": [f"v{x}" for x in rng.integers(0, 50_000, n)],
                  "pickup_location_id": rng.integers(-3, 270, n).astype(np.int16),
                  "fare_amount": np.round(rng.uniform(-5, 90, n), 2)})
    pq.write_table(t, tmp_path / "t.parquet")
    ingest([tmp_path / "t.parquet"], tmp_path / "data" / "trips", page_size=4096)
    queries = ["SELECT COUNT(*), SUM(fare_amount) FROM trips WHERE s = 'v123' OR s >= 'v49990'",
               "SELECT COUNT(*) FROM trips WHERE s IN ('v1', 'v40000', 'nope')",
               "SELECT z.Borough, COUNT(*), SUM(t.fare_amount) FROM trips t JOIN zones z "
               "ON t.pickup_location_id = z.LocationID WHERE z.Zone LIKE '%Park%' "
               "GROUP BY z.Borough ORDER BY z.Borough",
               "SELECT z.Borough, COUNT(*) FROM trips t LEFT JOIN zones z "
               "ON t.pickup_location_id = z.LocationID GROUP BY z.Borough ORDER BY z.Borough"]
    for backend in ("host", "gpu", "file"):
        with bamql.connect(tmp_path / "data", device="gpu", backend=backend, cache="1MiB") as con:
            duck = duckdb.connect()
            duck.register("trips", t)
            duck.register("zones", con.dimensions["zones"].table)
            for sql in queries:
                assert_same_rows(con.sql(sql).rows(), duck.sql(sql).fetchall(),
                                 ordered="ORDER BY" in sql)
            con.register("small", t.slice(0, 5000))
            duck.register("small", t.slice(0, 5000))
            sql = "SELECT COUNT(*), MAX(fare_amount) FROM small WHERE s < 'v2'"
            assert_same_rows(con.sql(sql).rows(), duck.sql(sql).fetchall(), ordered=False)


@pytest.fixture(scope="module", params=["plain", "packed"])
def zstd_store(request, tmp_path_factory, taxi_orc):
    """The trips with zstd stream copies (512 B pages), plain or bit-packed."""
    from bamql.storage.ingest import ingest

    d = tmp_path_factory.mktemp(f"zstd-{request.param}")
    ingest(taxi_orc, d / "trips", page_size=512, compress="zstd", pack=request.param == "packed")
    return d


def test_few_chunks_decompress_on_the_host_though_nvcomp_is_installed(zstd_store, cpu_answers,
                                                                      monkeypatch):
    from bamql.physical import cost
    pytest.importorskip("nvidia.nvcomp")
    # host decompression taken as free: every copy's chunks are "too few" for the GPU's call
    monkeypatch.setattr(cost, "DECOMPRESS_BYTES_PER_S", 1e12)
    with bamql.connect(zstd_store, device="gpu", backend="file", cache="64MiB") as con:
        inflater = con.gpu.backend.inflater
        assert inflater is not None and con._medium() == "nvcomp"
        calls = []
        monkeypatch.setattr(inflater, "read", lambda *a, **k: calls.append(1))
        planned = 0
        for name, sql in QUERIES.items():
            planned += "zstd copy" in con.explain(sql)
            for _ in range(2):
                assert_same_rows(con.sql(sql).rows(), cpu_answers[name],
                                 ordered="ORDER BY" in sql)
            con.gpu.clear_cache()
        assert planned >= 3 and not calls


def test_zstd_copies_decompressed_on_the_gpu_match_the_cpu_engine(zstd_store, cpu_answers,
                                                                  tmp_path, monkeypatch):
    import shutil
    from dataclasses import replace

    from bamql.config import Medium
    from bamql.errors import StoreError
    from bamql.physical import cost
    from bamql.storage.store import PageStore

    pytest.importorskip("nvidia.nvcomp")
    # a table this small streams plain where the GPU's fixed call time counts: plan as if free
    monkeypatch.setitem(cost.MEDIA, Medium.NVCOMP, replace(cost.NVCOMP, inflate_call_s=0.0))
    with bamql.connect(zstd_store, device="gpu", backend="file", cache="64MiB") as con:
        assert con.gpu.backend.inflater is not None and con._medium() == "nvcomp"
        planned = 0
        for name, sql in QUERIES.items():
            planned += "zstd copy" in con.explain(sql)
            for _ in range(2):  # from the copies, then resident or cached
                assert_same_rows(con.sql(sql).rows(), cpu_answers[name],
                                 ordered="ORDER BY" in sql)
            con.gpu.clear_cache()
        assert planned >= 3
    # a damaged chunk is a one-line error before it reaches nvCOMP; the GPU stays usable
    bad = tmp_path / "bad"
    shutil.copytree(zstd_store, bad)
    sql = "SELECT SUM(fare_amount), SUM(trip_distance), SUM(tip_amount) FROM trips WHERE vendor_id > 0"
    z = bad / "trips" / "zst-000.bin"
    raw = bytearray(z.read_bytes())
    with PageStore(bad / "trips") as st:
        for name in ("fare_amount", "trip_distance", "tip_amount", "vendor_id"):
            _, offs, lens = st.stream_chunks(name)
            for o, n in zip(offs, lens, strict=True):  # every chunk of every column read
                raw[int(o + n // 2)] ^= 0x5A
    z.write_bytes(bytes(raw))
    with bamql.connect(bad, device="gpu", backend="file") as con:
        assert "zstd copy" in con.explain(sql)
        with pytest.raises(StoreError, match="fails its checksum"):
            con.sql(sql).rows()
    with bamql.connect(zstd_store, device="gpu", backend="file") as con:
        with bamql.connect(zstd_store, device="cpu") as cpu:
            assert_same_rows(con.sql(sql).rows(), cpu.sql(sql).rows(), ordered=False)
