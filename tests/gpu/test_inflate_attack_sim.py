"""Attacks on the GPU decompression path (``gpu.inflate``, ``FileBackend.prefetch``, the
engine's resident and prepared views), in numba's CUDA simulator with the host decoder in
nvCOMP's place: one device buffer reused by query after query, columns at other offsets,
caches too small to keep a column, cache clears (from other threads too), a damaged chunk in
one column of a batch, aligned staging slots, and every answer against DuckDB."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("numba.cuda")

SCRIPT = textwrap.dedent("""
    import json
    import random
    import shutil
    import sys
    import tempfile
    import threading
    import warnings
    from dataclasses import replace
    from pathlib import Path

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    import bamql
    from bamql.config import Medium
    from bamql.errors import StoreError
    from bamql.gpu import backends, inflate
    from bamql.physical import cost
    from bamql.physical.ranges import RowRanges
    from bamql.storage import residency
    from bamql.storage.ingest import ingest
    from bamql.storage.store import PageStore
    from tests.reference import assert_same_rows, duck

    warnings.simplefilter("ignore", RuntimeWarning)  # the simulated hash's uint64 wrap-around
    residency.set_enabled(False)  # the disk's plans (zstd streams) whatever is cached
    mode, opts = sys.argv[1], json.loads(sys.argv[2])

    class Counting(inflate.HostDecoder):
        calls = 0
        align = opts.get("align", 8)

        def decode(self, *args):
            super().decode(*args)
            Counting.calls += 1

    inflate.make = lambda cuda: inflate.GpuInflater(cuda, Counting())
    # a table this small streams plain where the GPU's fixed call time counts: plan as if free
    cost.MEDIA[Medium.NVCOMP] = replace(cost.NVCOMP, inflate_call_s=0.0)

    rng = np.random.default_rng(7)
    n = 20000
    t = pa.table({
        "c": pa.array(np.sort(rng.integers(0, 1000, n)), pa.int64(), mask=rng.random(n) < 0.03),
        "k": pa.array(rng.integers(1, 266, n), pa.int64(), mask=rng.random(n) < 0.05),
        "w": pa.array(rng.choice(rng.integers(-5000, 3000, 40), n), pa.int64(),
                      mask=rng.random(n) < 0.1),
        "f": pa.array(rng.choice(rng.integers(-500, 9000, 40), n) / 100, pa.float64(),
                      mask=rng.random(n) < 0.1),
        "s": pa.array(rng.choice(["a", "bb", "ccc"], n), mask=rng.random(n) < 0.1),
        "b": pa.array(rng.integers(0, 5, n).astype(np.int8)),
    })
    d = Path(tempfile.mkdtemp())
    pq.write_table(t, d / "t.parquet")
    data = d / "data"
    ingest([d / "t.parquet"], data / "trips", compress="zstd", **opts.get("ingest", {}))
    Q = [
        "SELECT COUNT(*), SUM(w), SUM(f) FROM trips WHERE k > 20",
        "SELECT SUM(k), COUNT(w) FROM trips WHERE f < 50",
        "SELECT s, SUM(w), MAX(k) FROM trips WHERE w > -4000 GROUP BY s",
        "SELECT COUNT(*), SUM(w), MIN(f), SUM(k) FROM trips WHERE c BETWEEN 100 AND 200",
        "SELECT COUNT(*), SUM(w) FROM trips WHERE c > 5000",
        "SELECT b, COUNT(*), SUM(f) FROM trips WHERE c >= 900 GROUP BY b",
        "SELECT COUNT(*), SUM(c), SUM(b) FROM trips WHERE k < 100 AND w > 0",
        "SELECT SUM(f), SUM(k) FROM trips WHERE b = 3",
    ]
    WANT = {q: duck(q, t) for q in Q}

    def check(con, q, tag):
        got = con.sql(q).rows()
        try:
            assert_same_rows(got, WANT[q], ordered=False)
        except AssertionError:
            raise AssertionError(f"wrong answer ({tag}): {q}: {got[:3]} != {WANT[q][:3]}") from None

    if mode == "mix":
        # each query twice per round in a shuffled order, in sessions whose caches keep no
        # column (16 KiB), some, or all, with random cache clears between queries
        r = random.Random(1)
        planned, c0 = 0, Counting.calls
        for cache in ("16KiB", "64KiB", None):
            with bamql.connect(data, device="gpu", backend="file", cache=cache) as con:
                planned += sum("zstd copy" in con.explain(q) for q in Q)
                for rd in range(opts.get("rounds", 2)):
                    order = Q * 2
                    r.shuffle(order)
                    for q in order:
                        check(con, q, f"cache {cache}, round {rd}")
                        if r.random() < 0.15:
                            con.gpu.clear_cache()
        assert planned >= 12 and Counting.calls > c0, (planned, Counting.calls - c0)

    elif mode == "race":
        # another thread clears the caches just after the batch of compressed columns is read
        # (a column adopted by the first run is resident when the batch is chosen)
        real = backends.FileBackend.prefetch
        con = None

        def prefetch(self, source, store, cols, ranges):
            real(self, source, store, cols, ranges)
            if con is not None and cols:
                th = threading.Thread(target=con.gpu.clear_cache)
                th.start()
                th.join(timeout=2.0)  # done, or waiting for the query to finish its scans

        backends.FileBackend.prefetch = prefetch
        q = Q[0]
        c = bamql.connect(data, device="gpu", backend="file")
        assert "zstd copy" in c.explain(q)
        check(c, q, "first run")
        assert any(tb.resident for tb in c.gpu.tables.values()), "nothing was adopted"
        con = c
        for i in range(3):
            check(c, q, f"a cache clear from another thread, run {i}")
        c.close()

    elif mode == "fallback":
        # a compressed column asked for outside the prefetched batch gets a buffer of its own:
        # the batch's columns, already handed out, stay intact
        store = PageStore(data / "trips")
        with bamql.connect(data, device="gpu", backend="file") as con:
            con.sql(Q[-1]).rows()  # the table's source on the GPU
            be, tb = con.gpu.backend, next(iter(con.gpu.tables.values()))
            ranges = RowRanges.whole(store.rows)
            cols = {nm: store.column(nm) for nm in ("f", "k", "w")}
            be.prefetch(tb.source, store, [cols["f"], cols["w"]], ranges)
            got = {nm: be.column(tb.source, store, cols[nm], ranges, True) for nm in ("f", "k", "w")}
            ps = store.page_size
            for nm, rd in got.items():
                c = cols[nm]
                assert rd.on_gpu, nm
                want = np.empty((c.n_pages, ps), np.uint8)
                store.read_pages(np.arange(c.first_page, c.first_page + c.n_pages), want)
                have = rd.buffer[rd.offset : rd.offset + c.n_pages * ps].copy_to_host()
                assert np.array_equal(have, want.ravel()), f"column {nm} overwritten"

    elif mode == "layout":
        # aligned staging slots and chunks moved last-first, reads cut small: every page of
        # scattered ranges lands intact
        store = PageStore(data / "trips")
        ps, cp = store.page_size, store.manifest.streams.chunk_pages
        from concurrent.futures import ThreadPoolExecutor
        from numba import cuda
        inflate.READ_BYTES = 700
        pool = ThreadPoolExecutor(4)
        cols = [store.column(nm) for nm in ("b", "c", "f", "k", "s", "w")]
        for align in (1, 16, 64, 4096):
            Counting.align = align
            inf = inflate.GpuInflater(cuda, Counting())
            for trial in range(3):
                rr = random.Random(align * 10 + trial)
                starts = sorted(rr.sample(range(0, n - 300, 300), 6))
                ranges = RowRanges.of([(s, s + rr.randint(1, 600)) for s in starts])
                sizes = [c.n_pages * ps for c in cols]
                base = np.concatenate([[0], np.cumsum(sizes)[:-1]])
                out = cuda.to_device(np.zeros(sum(sizes), np.uint8))
                items = [(c, *ranges.page_runs(c.rows_per_page), int(b))
                         for c, b in zip(cols, base)]
                inf.read(store, items, out, pool, {})
                host = out.copy_to_host()
                for (c, p0, p1, b) in items:
                    for a, e in zip(p0.tolist(), p1.tolist()):
                        want = np.empty((e - a, ps), np.uint8)
                        store.read_pages(np.arange(c.first_page + a, c.first_page + e), want)
                        have = host[b + a * ps : b + e * ps]
                        assert np.array_equal(have, want.ravel()), (align, c.name, a, e)
                assert Counting.calls, "no decode"

    elif mode == "damage":
        # one chunk of column w damaged: queries reading w fail with one line, every time;
        # queries not reading it (in the same session, before and after) answer right
        bad = d / "bad"
        shutil.copytree(data, bad)
        store = PageStore(bad / "trips")
        _, offs, lens = store.stream_chunks("w")
        z = bad / "trips" / store.manifest.streams.file
        raw = bytearray(z.read_bytes())
        k = len(offs) // 2
        raw[int(offs[k] + lens[k] // 2)] ^= 0x40
        z.write_bytes(bytes(raw))
        del store
        with bamql.connect(bad, device="gpu", backend="file", cache=opts.get("cache")) as con:
            assert "zstd copy" in con.explain(Q[0]) and "zstd copy" in con.explain(Q[-1])
            for q in (Q[-1], Q[0], Q[-1], Q[1], Q[-1], Q[0], Q[-1]):
                scan = con.explain(q).split("Scan(trips: ")[1].split(")")[0].split(", ")
                if "w" in scan:
                    try:
                        con.sql(q).rows()
                    except StoreError as e:
                        assert "fails its checksum" in str(e) and "\\n" not in str(e), e
                    else:
                        raise AssertionError(f"a damaged chunk went unnoticed: {q}")
                else:
                    check(con, q, "after a damaged chunk")
    print("all ok")
""")


def _run(mode: str, **opts) -> None:
    import json

    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", SCRIPT, mode, json.dumps(opts)], env=env,
                       capture_output=True, text=True, timeout=900,
                       cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert r.returncode == 0 and "all ok" in r.stdout, r.stdout[-2000:] + r.stderr[-3000:]


@pytest.mark.slow  # in CI's slow run; the default run's mix clears the caches between queries
def test_a_cache_clear_from_another_thread_mid_query_leaves_the_answer_right():
    _run("race", ingest={"page_size": 512})


def test_a_column_outside_the_prefetched_batch_leaves_the_batch_intact():
    _run("fallback", ingest={"page_size": 512})


@pytest.mark.slow  # in CI's slow run; the default run's prefetches stage at the default alignment
def test_aligned_staging_slots_deliver_every_page_of_scattered_ranges():
    _run("layout", ingest={"page_size": 512})


@pytest.mark.parametrize("cache", [pytest.param("16KiB", marks=pytest.mark.slow), None])
def test_a_damaged_chunk_in_one_column_fails_its_queries_only(cache):
    _run("damage", ingest={"page_size": 512}, cache=cache)


# the whole matrix in CI's slow run: the default run's fallback and damage cases clear the
# simulated caches between queries
@pytest.mark.parametrize("ingest", [
    pytest.param({"page_size": 512}, marks=pytest.mark.slow),
    pytest.param({"page_size": 4096}, marks=pytest.mark.slow),
    pytest.param({"page_size": 65536}, marks=pytest.mark.slow),
    pytest.param({"page_size": 512, "pack": True}, marks=pytest.mark.slow),
], ids=["512", "4096", "65536", "packed"])
def test_queries_in_shuffled_orders_with_small_caches_and_clears_match_duckdb(ingest):
    _run("mix", ingest=ingest, align=64, rounds=1 if ingest["page_size"] == 512 else 2)
