from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from bamql.errors import IngestError, StoreError
from bamql.storage.format import MANIFEST, volume_name
from bamql.storage.ingest import ingest
from bamql.storage.store import PageStore
from tests.conftest import SAMPLES, read_orc


@pytest.mark.parametrize("page_size", [512, 4096, 65536])
@pytest.mark.parametrize("volumes", [1, 3])
def test_round_trip_every_column(tmp_path, taxi_orc, page_size, volumes):
    ingest(taxi_orc, tmp_path / "t", page_size=page_size, volumes=volumes)
    ref = read_orc(taxi_orc)
    with PageStore(tmp_path / "t") as s:
        assert s.rows == ref.num_rows
        for name in ref.column_names:
            got = s.to_arrow(name)
            want = ref[name].combine_chunks()
            if pa.types.is_timestamp(want.type):  # ORC reads back as ns; values are whole us
                want = want.cast(got.type)
            assert got.type == want.type, name
            assert got.equals(want), name
            assert got.null_count == want.null_count
        assert s.verify() == []


def test_narrow_encodings(taxi_store):
    with PageStore(taxi_store / "trips") as s:
        assert s.column("pickup_location_id").dtype == "int16"  # zone ids fit 2 bytes
        assert s.column("vendor_id").dtype == "int8"
        assert s.column("store_and_fwd_flag").kind == "string"
        assert s.column("store_and_fwd_flag").dictionary == ("N", "Y")
        assert s.column("pickup_datetime").dtype == "int64"
        # an exact histogram of the small domain
        h = s.column("pickup_location_id").histogram
        ref = s.to_arrow("pickup_location_id").to_numpy()
        assert h["255"] == int((ref == 255).sum())


def test_zone_maps_are_exact(taxi_store):
    with PageStore(taxi_store / "trips") as s:
        for c in s.manifest.columns:
            vals, _ = s.read_column_pages(c.name)
            for k in range(c.n_pages):
                stored = vals[k * c.rows_per_page : (k + 1) * c.rows_per_page]
                page = c.decode(stored)  # zone maps are in the column's units
                ok = ~np.isnan(page) if page.dtype.kind == "f" else page != c.sentinel
                p = c.first_page + k
                assert s.pages.nulls[p] == (~ok).sum()
                if ok.any():
                    assert s.pages.zmin[p] == page[ok].min() and s.pages.zmax[p] == page[ok].max()
                else:
                    assert s.pages.zmin[p] == np.inf


def test_read_pages_reports_bytes(taxi_store):
    with PageStore(taxi_store / "trips") as s:
        ids = np.array([0, 1, 2, 7, 40])
        out = np.empty((5, s.page_size), np.uint8)
        assert s.read_pages(ids, out) == 5 * s.page_size


def _copy(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_checksums_catch_one_flipped_byte(tmp_path, taxi_store, where):
    t = _copy(taxi_store / "trips", tmp_path / "trips")
    with PageStore(t) as s:
        c = s.column("fare_amount")
        page = {"first": 0, "middle": c.n_pages // 2, "last": c.n_pages - 1}[where]
        gp, ps = c.first_page + page, s.page_size
    vol = t / volume_name(0)
    with open(vol, "r+b") as f:
        f.seek(gp * ps + 123)
        b = f.read(1)
        f.seek(gp * ps + 123)
        f.write(bytes([b[0] ^ 0x10]))
    with PageStore(t) as s:
        problems = s.verify()
        assert len(problems) == 1 and "fare_amount" in problems[0] and f"page {page} " in problems[0]
        with pytest.raises(StoreError, match=f"column 'fare_amount' page {page} "):
            s.to_arrow("fare_amount")
        s.to_arrow("tip_amount")  # other columns still read


def test_scattered_reads_match_and_catch_corruption(tmp_path, taxi_store):
    # the GPU file backend's host workers read with read_scattered: any order, repeats
    t = _copy(taxi_store / "trips", tmp_path / "trips")
    with PageStore(t) as s:
        rng = np.random.default_rng(5)
        ids = rng.integers(0, s.manifest.total_pages, 300)
        ids[:3] = ids[3]  # repeats
        rows = rng.permutation(400)[:300]
        out = np.zeros((400, s.page_size), np.uint8)
        s.read_scattered(ids, out, rows)
        want = np.zeros((1, s.page_size), np.uint8)
        for p, r in zip(ids, rows, strict=True):
            s.read_pages(np.array([p]), want)
            assert (out[r] == want[0]).all()
        gp = int(ids[10])
        with pytest.raises(StoreError, match="outside"):
            s.read_scattered(np.array([s.manifest.total_pages]), out, np.array([0]))
    nv = s.manifest.n_volumes
    with open(t / volume_name(gp % nv), "r+b") as f:
        f.seek((gp // nv) * s.page_size + 5)
        b = f.read(1)
        f.seek((gp // nv) * s.page_size + 5)
        f.write(bytes([b[0] ^ 1]))
    with PageStore(t) as s, pytest.raises(StoreError, match=f"global page {gp}"):
        s.read_scattered(np.array([gp]), out, np.array([7]))


def test_truncated_and_missing_volume(tmp_path, taxi_store):
    t = _copy(taxi_store / "trips", tmp_path / "trips")
    vol = t / volume_name(0)
    os.truncate(vol, vol.stat().st_size - 100)
    with pytest.raises(StoreError, match="truncated"):
        PageStore(t)
    vol.unlink()
    with pytest.raises(StoreError, match="missing"):
        PageStore(t)
    (t / MANIFEST).write_text("{not json")
    with pytest.raises(StoreError, match="corrupt"):
        PageStore(t)
    with pytest.raises(StoreError, match="does not exist"):
        PageStore(tmp_path / "nope")


def test_ingest_errors(tmp_path, taxi_orc):
    with pytest.raises(IngestError, match="does not exist"):
        ingest([tmp_path / "missing.orc"], tmp_path / "o1")
    fake = tmp_path / "fake.orc"
    fake.write_text("vendor_id,x\n1,2\n")
    with pytest.raises(IngestError, match="not a readable ORC file"):
        ingest([fake], tmp_path / "o2")
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"vendor_id": ["x", "y"]}), other)  # string vs integer
    with pytest.raises(IngestError, match="schemas disagree"):
        ingest([taxi_orc[0], other], tmp_path / "o3")
    nested = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"a": [[1], [2]]}), nested)
    with pytest.raises(IngestError, match="type list"):
        ingest([nested], tmp_path / "o4")
    with pytest.raises(IngestError, match="already exists"):
        ingest(taxi_orc, tmp_path)
    with pytest.raises(StoreError, match="power of two"):
        ingest(taxi_orc, tmp_path / "o5", page_size=3000)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_ingest_a_subset_of_the_columns(tmp_path, taxi_orc, taxi_table):
    keep = ["total_amount", "pickup_location_id", "total_amount"]  # any order, repeats
    ingest(taxi_orc, tmp_path / "sub", columns=keep)
    with PageStore(tmp_path / "sub") as s:
        # kept in the sources' order, values unchanged
        assert s.to_table().equals(taxi_table.select(["pickup_location_id", "total_amount"]))
    ingest(taxi_orc, tmp_path / "parts", columns=["fare_amount"], partitions=2)
    from bamql.storage.partitioned import PartitionedTable

    with PartitionedTable(tmp_path / "parts") as t:
        assert all(list(p.columns) == ["fare_amount"] for p in t.parts)
    with pytest.raises(IngestError, match="no column 'tip' in .*; it has: vendor_id"):
        ingest(taxi_orc, tmp_path / "bad", columns=["fare_amount", "tip"])
    with pytest.raises(IngestError, match="names no column"):
        ingest(taxi_orc, tmp_path / "bad", columns=[])
    assert not (tmp_path / "bad").exists()


def test_parquet_and_csv_sources(tmp_path, taxi_table):
    pq.write_table(taxi_table, tmp_path / "t.parquet", row_group_size=7_000)
    ingest([tmp_path / "t.parquet"], tmp_path / "p")
    with PageStore(tmp_path / "p") as s:
        assert s.to_table().equals(taxi_table)


def test_real_sample_ingests_with_matching_sums(sample_store):
    import pyarrow.csv as pacsv

    ref = pa.concat_tables(pacsv.read_csv(p) for p in SAMPLES)
    with PageStore(sample_store / "trips") as s:
        assert s.rows == ref.num_rows == 20_000
        for name in ref.column_names:
            got = s.to_arrow(name)
            if pa.types.is_timestamp(got.type):
                assert got.equals(ref[name].combine_chunks().cast(got.type))
            elif pa.types.is_string(got.type):
                assert got.equals(ref[name].combine_chunks())
            else:
                assert pc.sum(got).as_py() == pytest.approx(pc.sum(ref[name]).as_py(), rel=1e-12)
                assert got.null_count == ref[name].null_count


_KILL_SCRIPT = """
import sys, time
import bamql.storage.ingest as ing_mod
import sys as _s
ing = _s.modules["bamql.storage.ingest"]
orig = ing.PageWriter.append
def slow(self, i, v):
    orig(self, i, v)
    print("writing", flush=True)
    time.sleep(0.2)
ing.PageWriter.append = slow
ing.ingest([sys.argv[1]], sys.argv[2])
"""


def test_killed_ingest_leaves_nothing_visible(tmp_path, taxi_orc):
    out = tmp_path / "data" / "trips"
    p = subprocess.Popen([sys.executable, "-c", _KILL_SCRIPT, str(taxi_orc[0]), str(out)],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "writing"
    time.sleep(0.3)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert not out.exists()
    visible = [x for x in (tmp_path / "data").iterdir() if not x.name.startswith(".")]
    assert visible == []
    ingest([taxi_orc[0]], out)  # a second ingest to the same name succeeds, and cleans up
    assert [x.name for x in (tmp_path / "data").iterdir()] == ["trips"]
    with PageStore(out) as s:
        assert s.verify() == []


def test_a_pickled_page_metadata_file_with_a_matching_hash_is_refused(tmp_path, taxi_store):
    import shutil

    import numpy as np

    from bamql.errors import StoreError
    from bamql.storage.store import PageStore
    from tests.conftest import edit_pages_meta

    t = tmp_path / "trips"
    shutil.copytree(taxi_store / "trips", t)
    # loading it would unpickle
    edit_pages_meta(t, lambda a: a.update(checksum=np.array([object()], dtype=object)))
    with pytest.raises(StoreError, match="malformed"):
        PageStore(t)
