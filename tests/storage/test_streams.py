"""Compressed stream copies: the same pages back, damage caught, the planner's choice."""

from __future__ import annotations

import numpy as np
import pytest

import bamql
from bamql.errors import IngestError, StoreError
from bamql.queries import load
from bamql.storage.ingest import ingest
from bamql.storage.store import PageStore
from tests.conftest import read_orc
from tests.reference import assert_same_rows, duck


@pytest.fixture(scope="module")
def small_pages(tmp_path_factory, taxi_orc):
    d = tmp_path_factory.mktemp("streams")
    ingest(taxi_orc, d / "trips", page_size=512, compress="zstd")
    return d


def test_the_copy_gives_back_the_same_pages(small_pages):
    rng = np.random.default_rng(2)
    with PageStore(small_pages / "trips") as s:
        assert s.manifest.streams is not None and s.manifest.streams.codec == "zstd"
        for name in ("pickup_location_id", "trip_distance", "mta_tax", "pickup_datetime"):
            c = s.column(name)
            assert 0 < s.stream_bytes[name] < c.n_pages * s.page_size  # it compresses
            for p0, p1 in [(0, c.n_pages), *(sorted(rng.integers(0, c.n_pages + 1, 2)) for _ in range(20))]:
                p0, p1 = int(p0), int(max(p1, p0 + 1))
                p1 = min(p1, c.n_pages)
                if p0 >= p1:
                    continue
                a = np.empty((p1 - p0, s.page_size), np.uint8)
                b = np.empty_like(a)
                n = s.read_stream(name, p0, p1, a)
                s.read_pages(np.arange(c.first_page + p0, c.first_page + p1), b)
                assert (a == b).all() and 0 < n <= s.stream_bytes[name]
        assert s.verify() == []


def test_none_writes_no_copy(tmp_path, taxi_orc):
    ingest(taxi_orc, tmp_path / "t", compress="none")
    with PageStore(tmp_path / "t") as s:
        assert s.manifest.streams is None and s.stream_bytes == {}
        c = s.column("fare_amount")
        a = np.empty((3, s.page_size), np.uint8)
        assert s.read_stream("fare_amount", 0, 3, a) == 3 * s.page_size  # the pages themselves
        b = np.empty_like(a)
        s.read_pages(np.arange(c.first_page, c.first_page + 3), b)
        assert (a == b).all()
    with pytest.raises(IngestError, match=r"^--compress must be one of zstd, none, not 'lz4'$"):
        ingest(taxi_orc, tmp_path / "u", compress="lz4")
    assert not (tmp_path / "u").exists()


def test_damage_to_the_copy_is_one_clear_error(tmp_path, taxi_orc):
    import shutil

    shutil.copytree(taxi_orc[0].parent, tmp_path / "orc")
    ingest(sorted((tmp_path / "orc").glob("*.orc")), tmp_path / "t", page_size=512,
           compress="zstd")
    z = tmp_path / "t" / "zst-000.bin"
    with PageStore(tmp_path / "t") as s:
        c = s.column("trip_distance")
        k = s.manifest.streams.first_chunk["trip_distance"]
        off = int(s._zst[0][k]) + 40  # inside the column's first chunk
    raw = bytearray(z.read_bytes())
    raw[off] ^= 0xFF
    z.write_bytes(bytes(raw))
    with PageStore(tmp_path / "t") as s:
        buf = np.empty((c.n_pages, s.page_size), np.uint8)
        with pytest.raises(StoreError, match="trip_distance") as e:
            s.read_stream("trip_distance", 0, c.n_pages, buf)
        assert "\n" not in str(e.value)
        assert any("trip_distance" in p for p in s.verify())
    z.write_bytes(bytes(raw[:-10]))
    with pytest.raises(StoreError, match="zst-000.bin is missing, truncated or damaged"):
        PageStore(tmp_path / "t")


def test_disk_streams_read_the_copy_and_memory_does_not(small_pages, taxi_orc, monkeypatch):
    from bamql.physical import cost
    # decompressing on 8 threads, as on the 16-core GPU machine (this machine may have 2)
    monkeypatch.setattr(cost, "decompress_rate", lambda: 8 * cost.DECOMPRESS_BYTES_PER_S)
    sql = load("q06")
    with bamql.connect(small_pages, device="cpu", medium="file") as con:
        text = con.explain(sql)
        # the surcharge columns compress ~20-130x: from disk their copy is quicker to stream
        zipped = [ln.split()[0] for ln in text.splitlines() if "(zstd copy)" in ln]
        assert {"mta_tax", "tolls_amount"} <= set(zipped), text
        res = con.sql(sql)
        st = res.stats
        assert_same_rows(res.rows(), duck(sql, read_orc(taxi_orc)), ordered=False)
        for name in zipped:  # what came from disk is the copy's bytes
            assert st.columns[name].bytes_read < st.columns[name].whole_bytes / 4
    with bamql.connect(small_pages, device="cpu", medium="cached") as con:
        assert "(zstd copy)" not in con.explain(sql)  # from memory, decompressing costs more


def test_every_chunk_has_a_checksum_of_its_compressed_bytes(small_pages):
    from bamql.storage.streams import chunk_hash

    with PageStore(small_pages / "trips") as s:
        assert s.zst_sums is not None and s.zst_sums.dtype == np.uint64
        for name in ("pickup_location_id", "mta_tax"):
            k0, offs, lens = s.stream_chunks(name)
            assert len(offs) == -(-s.column(name).n_pages // s.manifest.streams.chunk_pages)
            for k in range(len(offs)):
                raw = np.empty(int(lens[k]), np.uint8)
                s.read_compressed(int(offs[k]), raw)
                assert chunk_hash(raw) == s.zst_sums[k0 + k]


def test_chunk_hash_sees_every_byte_at_any_alignment_and_length():
    from bamql.storage.streams import chunk_hash

    rng = np.random.default_rng(5)
    buf = rng.integers(0, 256, 4099).astype(np.uint8)
    seen = set()
    for start in range(8):  # unaligned views hash as their bytes do
        for n in (0, 1, 7, 8, 9, 63, 4000):
            blob = buf[start : start + n]
            h = chunk_hash(blob)
            assert h == chunk_hash(blob.copy())
            seen.add(int(h))
            for i in range(0, n, max(1, n // 5)):
                bad = blob.copy()
                bad[i] ^= 1 << int(rng.integers(0, 8))
                assert chunk_hash(bad) != h
    assert chunk_hash(np.zeros(3, np.uint8)) != chunk_hash(np.zeros(4, np.uint8))  # length counts
    assert len(seen) > 40  # distinct blobs, distinct sums (equal one-byte blobs aside)


def test_a_gpu_that_decompresses_streams_compressed_copies_of_large_columns(small_pages):
    from bamql.physical import cost
    with PageStore(small_pages / "trips") as s:
        c = s.column("trip_distance")
        ratio = c.n_pages * s.page_size / s.stream_bytes[c.name]
        assert ratio > 1.2
        # the GPU decompresses a large column faster than host threads do, so its copy wins
        # where it is smaller at all; a small one costs the GPU's fixed call time instead
        for n_pages in (1_000_000, 10_000_000):
            stream = n_pages * s.page_size / ratio
            assert cost.use_compressed(n_pages, s.page_size, cost.NVCOMP, stream)
            assert (cost.compressed_time(n_pages, s.page_size, cost.NVCOMP, stream)
                    < cost.compressed_time(n_pages, s.page_size, cost.QUEUE, stream))
        assert not cost.use_compressed(1_000, s.page_size, cost.NVCOMP, 1_000 * s.page_size / ratio)
        assert not cost.use_compressed(10_000_000, s.page_size, cost.NVCOMP,
                                       10_000_000 * s.page_size * 1.01)


@pytest.fixture(scope="module")
def widths(tmp_path_factory):
    """A store of columns 1, 2, 4 and 8 bytes wide (NULLs in each), whose chunks' last one
    is partial, with its compressed copy; and its source table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = tmp_path_factory.mktemp("widths")
    rng = np.random.default_rng(11)
    n = 70_001

    def nulls(p):
        return rng.random(n) < p

    t = pa.table({
        "i8": pa.array(rng.integers(0, 100, n), pa.int64(), mask=nulls(0.05)),
        "i16": pa.array(rng.integers(1, 266, n), pa.int64(), mask=nulls(0.05)),
        "i32": pa.array(rng.integers(-10**6, 10**6, n), pa.int64(), mask=nulls(0.05)),
        "i64": pa.array(rng.integers(-10**12, 10**12, n), pa.int64(), mask=nulls(0.05)),
        "f8": pa.array(rng.normal(0, 50, n), pa.float64(), mask=nulls(0.05)),
        "fare": pa.array(rng.integers(0, 9000, n) / 100, pa.float64(), mask=nulls(0.05)),
        "ts": pa.array(np.sort(rng.integers(1_546_300_800, 1_577_836_800, n)) * 10**6,
                       pa.timestamp("us"), mask=nulls(0.05)),
        "s": pa.array(rng.choice(["a", "bb", "ccc"], n), mask=nulls(0.05)),
    })
    pq.write_table(t, d / "t.parquet")
    ingest([d / "t.parquet"], d / "data" / "trips", page_size=512, compress="zstd")
    return d, t


def _read_all_ways(s: PageStore, name: str) -> np.ndarray:
    """Column ``name``'s pages, checked to come back the same from the compressed copy over
    the whole column, runs across chunk borders and the last (partial) chunk; returns them."""
    c, cp = s.column(name), s.manifest.streams.chunk_pages
    pages = np.empty((c.n_pages, s.page_size), np.uint8)
    s.read_pages(np.arange(c.first_page, c.first_page + c.n_pages), pages)
    last = (c.n_pages - 1) // cp * cp
    n = c.n_pages
    for p0, p1 in [(0, n), (min(cp - 3, n - 1), min(cp + 5, n)), (last, n), (n - 1, n),
                   (0, 1)]:
        got = np.empty((p1 - p0, s.page_size), np.uint8)
        s.read_stream(name, p0, p1, got)
        assert (got == pages[p0:p1]).all(), (name, p0, p1)
    return pages


def test_shuffle_moves_byte_k_of_element_i_to_k_n_plus_i():
    from bamql.storage.streams import shuffle, unshuffle

    rng = np.random.default_rng(4)
    for w in (1, 2, 4, 8):
        raw = rng.integers(0, 256, 8 * 1000).astype(np.uint8)
        sh = shuffle(raw, w)
        n = len(raw) // w
        i, k = rng.integers(0, n, 50), rng.integers(0, w, 50)
        assert (sh[k * n + i] == raw[i * w + k]).all()
        assert (unshuffle(sh, w) == raw).all()
        vals = raw.view(f"<u{w}")  # byte k of an element is its k-th least significant byte
        assert (sh[:n] == (vals & 0xFF)).all()


def test_chunks_are_shuffled_by_their_values_width_and_read_back(widths):
    from bamql.storage.streams import codec, shuffle

    d, _ = widths
    with PageStore(d / "data" / "trips") as s:
        m = s.manifest
        sizes = {c.name: c.itemsize for c in m.columns}
        assert set(sizes.values()) == {1, 2, 4, 8}
        # shuffled by their values' width where that shrinks the copy (it does not shrink
        # random doubles); 1-byte columns never
        sh = m.streams.shuffle
        assert {"i16": 2, "i32": 4, "i64": 8}.items() <= sh.items() and "f8" not in sh
        assert all(w == sizes[k] > 1 for k, w in sh.items())
        cp = m.streams.chunk_pages
        for c in m.columns:
            w = m.streams.shuffle.get(c.name, 1)
            pages = _read_all_ways(s, c.name)
            k0, offs, lens = s.stream_chunks(c.name)
            if w == 8:
                assert c.n_pages % cp and len(offs) > 2  # a partial last chunk
            for k in (0, len(offs) - 1):  # the copy holds the shuffled bytes' zstd
                raw = np.empty(int(lens[k]), np.uint8)
                s.read_compressed(int(offs[k]), raw)
                plain = pages[k * cp : (k + 1) * cp].reshape(-1)
                got = np.frombuffer(codec().decompress(raw, decompressed_size=plain.size,
                                                       asbytes=True), np.uint8)
                assert (got == shuffle(plain, w)).all()
                assert w == 1 or (got != plain).any()
        assert s.verify() == []


def test_the_engine_streams_shuffled_copies_and_answers_as_duckdb(widths, monkeypatch):
    from bamql.physical import cost
    d, t = widths
    monkeypatch.setattr(cost, "decompress_rate", lambda: 1e15)  # the copy always wins
    queries = [
        "SELECT COUNT(*), SUM(i8), SUM(i16), SUM(i32), SUM(i64), MIN(ts), MAX(ts) FROM trips "
        "WHERE f8 > -20",
        "SELECT s, COUNT(*), SUM(fare), MAX(i64), MIN(f8) FROM trips WHERE i16 BETWEEN -100 AND 2500 "
        "GROUP BY s",
        "SELECT COUNT(*), SUM(i32) FROM trips WHERE i64 > 1000000000000",  # no row
    ]
    with bamql.connect(d / "data", device="cpu", medium="file") as con:
        for q in queries:
            assert "(zstd copy)" in con.explain(q), con.explain(q)
            assert_same_rows(con.sql(q).rows(), duck(q, t), ordered=False)


def test_a_store_written_before_shuffling_reads_as_before(tmp_path, taxi_orc, monkeypatch):
    from bamql.storage.format import MANIFEST, ColumnMeta

    # as bamql wrote copies before
    monkeypatch.setattr(ColumnMeta, "shuffle_width", property(lambda c: 1))
    ingest(taxi_orc, tmp_path / "t", page_size=512, compress="zstd")
    monkeypatch.undo()
    assert '"shuffle"' not in (tmp_path / "t" / MANIFEST).read_text()  # no field, as before
    with PageStore(tmp_path / "t") as s:
        assert s.manifest.streams.shuffle == {}
        for name in ("pickup_location_id", "trip_distance", "pickup_datetime", "mta_tax"):
            _read_all_ways(s, name)
        assert s.verify() == []


def test_packed_columns_are_not_shuffled(widths, tmp_path):
    d, t = widths
    ingest([d / "t.parquet"], tmp_path / "t", page_size=512, compress="zstd", pack=True)
    with PageStore(tmp_path / "t") as s:
        packed = {c.name for c in s.manifest.columns if c.packed}
        assert {"i16", "i32", "i64", "ts"} <= packed  # shuffled when plain
        assert not packed & set(s.manifest.streams.shuffle)
        for c in s.manifest.columns:
            _read_all_ways(s, c.name)
        assert s.verify() == []
        i64 = s.column("i64")
    from tests.conftest import edit_manifest

    # a manifest that says a packed column's copy is shuffled is refused at open
    edit_manifest(tmp_path / "t", lambda m: m["streams"].update(shuffle={"i64": i64.itemsize}))
    with pytest.raises(StoreError, match=r"'i64': its compressed copy is shuffled by 8 bytes"):
        PageStore(tmp_path / "t")


@pytest.mark.parametrize("shuffle, match", [
    ({"i64": 3}, "compressed copy's description is malformed"),
    ({"nope": 8}, "compressed copy's description is malformed"),
    ({"i64": "8"}, "compressed copy's description is malformed"),
    ({"i64": 4}, "'i64': its compressed copy is shuffled by 4 bytes, not its values' width"),
    ({"i8": 2}, "'i8': its compressed copy is shuffled by 2 bytes, not its values' width"),
    ({"i32": 4}, "checksum"),  # i64 unshuffled: it does not read the chunks of i64 right
    ({}, "checksum"),
])
def test_a_wrong_shuffle_in_the_manifest_is_one_line_not_a_wrong_answer(widths, tmp_path,
                                                                        shuffle, match):
    import shutil

    from tests.conftest import edit_manifest

    d, _ = widths
    shutil.copytree(d / "data" / "trips", tmp_path / "t")
    edit_manifest(tmp_path / "t", lambda m: m["streams"].update(shuffle=shuffle))
    with pytest.raises(StoreError, match=match) as e:
        with PageStore(tmp_path / "t") as s:
            c = s.column("i64")
            s.read_stream("i64", 0, c.n_pages, np.empty((c.n_pages, s.page_size), np.uint8))
    assert "\n" not in str(e.value)


def test_info_reports_each_columns_copy(widths):
    import subprocess
    import sys

    d, _ = widths
    r = subprocess.run([sys.executable, "-m", "bamql.cli", "info", str(d / "data" / "trips")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    head, *rows = r.stdout.splitlines()[1:]
    assert head.split()[-2:] == ["MB", "z-ratio"]
    lines = {ln.split()[0]: ln.split() for ln in rows}
    with PageStore(d / "data" / "trips") as s:
        assert set(lines) == {c.name for c in s.manifest.columns}
        for c in s.manifest.columns:
            zst, ratio = float(lines[c.name][-2]), float(lines[c.name][-1])
            stored = c.n_pages * s.page_size
            assert zst == pytest.approx(s.stream_bytes[c.name] / 1e6, abs=0.006)
            assert ratio == pytest.approx(stored / s.stream_bytes[c.name], abs=0.006)


def test_each_column_is_shuffled_only_where_that_makes_its_copy_smaller(widths):
    from bamql.storage.streams import codec, shuffle

    d, _ = widths
    with PageStore(d / "data" / "trips") as s:
        cp = s.manifest.streams.chunk_pages
        for c in s.manifest.columns:
            if c.itemsize == 1:
                continue
            pages = _read_all_ways(s, c.name)
            both = [sum(len(codec().compress(shuffle(pages[k : k + cp].reshape(-1), w),
                                             asbytes=True)) for k in range(0, c.n_pages, cp))
                    for w in (1, c.itemsize)]
            # the choice rests on a sample of chunks: the copy is the smaller way, or close
            assert s.stream_bytes[c.name] == both[c.name in s.manifest.streams.shuffle]
            assert s.stream_bytes[c.name] <= 1.02 * min(both), (c.name, both)


def _hostile(n: int, seed: int):
    """A table of ``n`` rows: columns 1, 2, 4 and 8 bytes wide, NULL-heavy, all-NULL (an
    integer, a double and a timestamp) and a string column of many values (wide codes)."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)

    def nulls(p):
        return rng.random(n) < p

    return pa.table({
        "i8": pa.array(rng.integers(0, 100, n), pa.int64(), mask=nulls(0.3)),
        "i16": pa.array(rng.integers(1, 266, n), pa.int64(), mask=nulls(0.9)),
        "i32": pa.array(rng.integers(-10**6, 10**6, n), pa.int64(), mask=nulls(0.3)),
        "i64": pa.array(rng.integers(-10**12, 10**12, n), pa.int64(), mask=nulls(0.3)),
        "no_i": pa.array([None] * n, pa.int64()),
        "no_f": pa.array([None] * n, pa.float64()),
        "no_ts": pa.array([None] * n, pa.timestamp("us")),
        "fare": pa.array(rng.integers(0, 9000, n) / 100, pa.float64(), mask=nulls(0.3)),
        "ts": pa.array(np.sort(rng.integers(1_546_300_800, 1_577_836_800, n)) * 10**6,
                       pa.timestamp("us"), mask=nulls(0.5)),
        "key": pa.array([f"k{x}" for x in rng.integers(0, 70_000, n)], pa.string(),
                        mask=nulls(0.3)),
    })


_HOSTILE_QUERIES = [
    "SELECT COUNT(*), SUM(i8), SUM(i16), SUM(i32), SUM(i64), MIN(ts), MAX(ts), COUNT(ts) FROM trips",
    "SELECT COUNT(no_i), SUM(no_i), MAX(no_f), MIN(no_ts), COUNT(*) FROM trips",
    "SELECT COUNT(*), SUM(i32), MAX(fare) FROM trips WHERE ts > TIMESTAMP '2019-06-01' AND i64 > 0",
    "SELECT key, COUNT(*), SUM(i8) FROM trips WHERE i32 > 900000 GROUP BY key "
    "ORDER BY 2 DESC, 1 LIMIT 5",
    "SELECT COUNT(*), COUNT(DISTINCT key) FROM trips WHERE no_i IS NULL AND key > 'k5'",
]


@pytest.mark.parametrize("shape", ["one row", "no rows", "last chunk of one page", "4 KiB pages",
                                   "3 partitions", "appended"])
def test_hostile_shapes_stream_from_the_copy_and_answer_as_duckdb(shape, tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bamql.physical import cost
    from bamql.storage.ingest import append

    monkeypatch.setattr(cost, "decompress_rate", lambda: 1e15)  # the copy always wins
    n, kw = {"one row": (1, {}), "no rows": (0, {}), "last chunk of one page": (128 * 64 + 1, {}),
             "4 KiB pages": (30_001, {"page_size": 4096}),
             "3 partitions": (30_001, {"partitions": 3}),
             "appended": (20_000, {})}[shape]
    t = _hostile(n, 3)
    pq.write_table(t, tmp_path / "a.parquet")
    ingest([tmp_path / "a.parquet"], tmp_path / "data" / "trips", compress="zstd",
           **{"page_size": 512, **kw})
    if shape == "appended":  # the table and its copy rewritten with the new rows
        more = _hostile(10_001, 4)
        pq.write_table(more, tmp_path / "b.parquet")
        append([tmp_path / "b.parquet"], tmp_path / "data" / "trips")
        t = pa.concat_tables([t, more])
    stores = [m.parent for m in sorted((tmp_path / "data").rglob("manifest.json"))]
    assert len(stores) == (3 if shape == "3 partitions" else 1)
    shuffled = set()
    for d in stores:
        with PageStore(d) as s:
            shuffled |= set(s.manifest.streams.shuffle)
            for c in s.manifest.columns:
                if c.n_pages:
                    _read_all_ways(s, c.name)
            assert s.verify() == []
    assert n < 2 or {"i64", "no_ts"} <= shuffled  # wide columns, NULLs among them
    with bamql.connect(tmp_path / "data", device="cpu", medium="file") as con:
        for q in _HOSTILE_QUERIES:
            assert n == 0 or "(zstd copy)" in con.explain(q), con.explain(q)
            assert_same_rows(con.sql(q).rows(), duck(q, t), ordered=False)


def test_the_real_samples_stream_from_their_shuffled_copy_and_answer_as_duckdb(tmp_path,
                                                                                monkeypatch):
    from bamql.physical import cost
    from tests.conftest import SAMPLES

    ingest(SAMPLES, tmp_path / "z" / "trips", page_size=512, compress="zstd")
    with PageStore(tmp_path / "z" / "trips") as s:
        assert s.manifest.streams.shuffle  # the sample's wide columns are shuffled
        t = s.to_table()  # DuckDB reads the rows as the store holds them
    monkeypatch.setattr(cost, "decompress_rate", lambda: 1e15)  # the copy always wins
    queries = [load(q) for q in ("q01", "q06")] + [
        "SELECT payment_type, COUNT(*), SUM(total_amount), MIN(pickup_datetime), "
        "MAX(dropoff_datetime) FROM trips WHERE fare_amount < 10 GROUP BY payment_type",
        "SELECT COUNT(*), SUM(tip_amount), AVG(congestion_surcharge) FROM trips "
        "WHERE trip_distance > 5 AND passenger_count IS NOT NULL",
    ]
    with bamql.connect(tmp_path / "z", device="cpu", medium="file") as con:
        for q in queries:
            assert "(zstd copy)" in con.explain(q), con.explain(q)
            assert_same_rows(con.sql(q).rows(), duck(q, t), ordered=False)
