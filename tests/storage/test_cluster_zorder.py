"""Z-order clustering (``ingest(cluster_by="zorder(a,b)")``): the Z key, its spelling, every
answer as DuckDB's, the order kept by append and refresh, and pages pruned by a filter on
either key alone."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.config import ClusterOrder
from bamql.errors import StoreError, UsageError
from bamql.queries import load
from bamql.storage.cluster import (
    Clustering,
    arrow_values,
    describe,
    parse_cluster_by,
    permutation,
    rank_codes,
    zorder_key,
    zorder_permutation,
)
from bamql.storage.encoding import null_mask, sentinel_for
from bamql.storage.ingest import append, ingest, refresh
from bamql.storage.partitioned import open_table
from tests.conftest import SAMPLES, edit_manifest
from tests.reference import assert_same_rows, duck

NINE = [f"q{i:02d}" for i in range(1, 10)]
ZKEYS = "zorder(pickup_location_id, pickup_datetime)"


def _parts(path: Path) -> list[pa.Table]:
    with open_table(path) as t:
        return [p.to_table() for p in t.parts]


def _in_zorder(t: pa.Table, keys) -> bool:
    """Whether ``t``'s rows are in the Z-order of ``keys`` (their Z key never falls)."""
    return bool(np.all(np.diff(zorder_permutation([arrow_values(t.column(k)) for k in keys])) > 0))


# -- the Z key --------------------------------------------------------------------------------
def test_rank_codes_keep_order_put_nan_then_null_last_and_span_the_range():
    v = np.array([5.0, -1.0, np.nan, 5.0, 2.0, 0.0], dtype=np.float64)
    v[5] = sentinel_for(np.float64)  # the NULL bit pattern
    c = rank_codes(v, null_mask(v), 8)
    # distinct: -1, 2, 5, NaN, NULL -> ranks 0..4 scaled by 256 // 5
    assert c.tolist() == [r * 256 // 5 for r in (2, 0, 3, 2, 1, 4)]
    many = np.arange(1000, dtype=np.int64)[::-1]  # more values than 4-bit codes
    c = rank_codes(many, np.zeros(1000, bool), 4)
    assert c.max() == 15 and c.min() == 0 and np.all(np.diff(c.astype(np.int64)) <= 0)
    empty = rank_codes(np.zeros(0, np.int32), np.zeros(0, bool), 8)
    assert len(empty) == 0


def test_zorder_key_interleaves_bits_first_key_highest():
    rng = np.random.default_rng(11)
    for k, bits in [(2, 32), (3, 21), (5, 12), (8, 8)]:
        codes = [rng.integers(0, 1 << bits, 300, dtype=np.uint64) for _ in range(k)]
        want = []
        for r in range(300):
            z = 0
            for b in range(bits - 1, -1, -1):
                for c in codes:
                    z = (z << 1) | ((int(c[r]) >> b) & 1)
            want.append(z)
        assert zorder_key(codes, bits).tolist() == want
    with pytest.raises(ValueError):
        zorder_key([np.zeros(1, np.uint64)] * 3, 32)


def test_zorder_of_two_keys_walks_the_z_curve_and_of_one_key_is_a_sort():
    a, b = np.arange(16) % 4, np.arange(16) // 4
    p = permutation([a.astype(np.int16), b.astype(np.int16)], ClusterOrder.ZORDER)
    assert [(int(a[i]), int(b[i])) for i in p[:8]] == [
        (0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (0, 3), (1, 2), (1, 3)]
    rng = np.random.default_rng(2)
    k = rng.integers(-5, 5, 2000).astype(np.int32)
    k[rng.random(2000) < 0.1] = sentinel_for(np.int32)
    assert np.array_equal(permutation([k], ClusterOrder.ZORDER), permutation([k]))
    # rank codes of one key alone, sorted stably, are the same order
    assert np.array_equal(zorder_permutation([(k, null_mask(k))]), permutation([k]))


def test_spellings_parse_and_bad_ones_are_usage_errors():
    assert parse_cluster_by("zorder(a, b)") == Clustering(("a", "b"), ClusterOrder.ZORDER)
    assert parse_cluster_by(" ZORDER( a ,b ) ") == Clustering(("a", "b"), ClusterOrder.ZORDER)
    assert parse_cluster_by("a,b") == Clustering(("a", "b"), ClusterOrder.SORT)
    assert parse_cluster_by("sort(a,b)") == Clustering(("a", "b"), ClusterOrder.SORT)
    assert parse_cluster_by(None) == Clustering() and not parse_cluster_by(None)
    c = parse_cluster_by("zorder(a,b)")
    assert describe(c.keys, c.order) == "zorder(a, b)"
    for bad, text in [("hilbert(a,b)", "no cluster order 'hilbert'"), ("zorder(a,a)", "twice"),
                      ("zorder()", "empty column name"), ("zorder(a,b", "not a,b or zorder"),
                      ("a,(b)", "not a,b or zorder"),
                      ("zorder(a,b,c,d,e,f,g,h,i)", "at most 8 keys")]:
        with pytest.raises(UsageError, match=text):
            parse_cluster_by(bad)


def test_bad_spellings_are_one_line_cli_errors(tmp_path, nully):
    for spec, text in [("hilbert(k,s)", "no cluster order 'hilbert'"),
                       ("zorder(k,nope)", "no column 'nope'")]:
        r = subprocess.run([sys.executable, "-m", "bamql.cli", "ingest", str(nully[0]), "--out",
                            str(tmp_path / "t"), "--cluster-by", spec], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 1 and text in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "t").exists()


# -- answers on the real sample ---------------------------------------------------------------
@pytest.fixture(scope="module")
def sample_table() -> pa.Table:
    return pa.concat_tables(pacsv.read_csv(p) for p in SAMPLES)


def test_zordered_sample_answers_q1_q9_as_duckdb(tmp_path, sample_table):
    ingest(SAMPLES, tmp_path / "trips", page_size=512, partitions=2, cluster_by=ZKEYS)
    with open_table(tmp_path / "trips") as t:
        assert t.verify() == []
        assert all(p.manifest.cluster_by == ("pickup_location_id", "pickup_datetime")
                   and p.manifest.cluster_order == "zorder" for p in t.parts)
    keys = ("pickup_location_id", "pickup_datetime")
    assert all(_in_zorder(p, keys) for p in _parts(tmp_path / "trips"))
    with bamql.connect(tmp_path, device="cpu") as con:
        for name in NINE:
            sql = load(name)
            assert_same_rows(con.sql(sql).rows(), duck(sql, sample_table),
                             ordered="ORDER BY" in sql)
        text = "\n".join(r[0] for r in con.sql("EXPLAIN " + load("q06")).rows())
        assert f"clustered by {ZKEYS}" in text
    r = subprocess.run([sys.executable, "-m", "bamql.cli", "info", str(tmp_path / "trips")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "clustered by zorder(pickup_location_id, pickup_datetime)" \
        in r.stdout.splitlines()[0]


# -- NULL keys, strings, append, refresh --------------------------------------------------------
GROUPS = ("SELECT k, s, COUNT(*), SUM(x), MIN(x), MAX(x) FROM trips GROUP BY k, s",
          "SELECT COUNT(*), AVG(x) FROM trips WHERE k IN (3, 4) AND s = 'yy'",
          "SELECT COUNT(*), SUM(x) FROM trips WHERE k IS NULL OR s IS NULL",
          "SELECT COUNT(*), SUM(x) FROM trips WHERE x BETWEEN -1 AND 1 AND k < 5",
          "SELECT COUNT(*), SUM(x) FROM trips WHERE k > 100")  # no row: an empty match


@pytest.mark.parametrize("spec,keys", [("zorder(s,k)", ["s", "k"]),
                                       ("zorder(x,k,s)", ["x", "k", "s"])])
def test_null_keys_and_answers_match(tmp_path, nully, spec, keys):
    ingest(nully[:1], tmp_path / "trips", page_size=512, cluster_by=spec)
    t = _parts(tmp_path / "trips")[0]
    ref = pq.read_table(nully[0])
    # the store's rows are the source's in the order the same function gives over Arrow
    perm = zorder_permutation([arrow_values(ref.column(k)) for k in keys])
    assert t.equals(ref.take(perm).cast(t.schema)) or all(
        t.column(c).to_pylist() == ref.take(perm).column(c).to_pylist() for c in ref.column_names)
    with bamql.connect(tmp_path, device="cpu") as con:
        for sql in GROUPS:
            assert_same_rows(con.sql(sql).rows(), duck(sql, ref), ordered=False)


def test_append_and_refresh_keep_the_zorder(tmp_path, nully):
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(nully[0], src / nully[0].name)
    ingest([f"{src}/*.parquet"], tmp_path / "trips", page_size=512, partitions=2,
           cluster_by="zorder(k,s)")
    shutil.copy(nully[1], src / nully[1].name)
    assert refresh(tmp_path / "trips").added_rows == 1700
    append(nully[:1], tmp_path / "trips")
    with open_table(tmp_path / "trips") as t:
        assert t.verify() == [] and t.rows == 7700
        assert all(p.manifest.cluster_by == ("k", "s") and p.manifest.cluster_order == "zorder"
                   for p in t.parts)
    assert all(_in_zorder(p, ["k", "s"]) for p in _parts(tmp_path / "trips"))
    ref = pa.concat_tables(pq.read_table(f) for f in (nully[0], nully[1], nully[0]))
    with bamql.connect(tmp_path, device="cpu") as con:
        for sql in GROUPS:
            assert_same_rows(con.sql(sql).rows(), duck(sql, ref), ordered=False)


# -- pages read ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def grid(tmp_path_factory) -> Path:
    """400,000 rows of two independent keys of 1,000 values each, and a value column."""
    d = tmp_path_factory.mktemp("grid")
    rng = np.random.default_rng(8)
    n = 400_000
    pq.write_table(pa.table({"a": rng.integers(0, 1000, n, dtype=np.int32),
                             "b": rng.integers(0, 1000, n, dtype=np.int32),
                             "v": rng.integers(0, 10**6, n, dtype=np.int64)}), d / "g.parquet")
    return d / "g.parquet"


def _pages(data: Path, sql: str):
    with bamql.connect(data, device="cpu") as con:
        con.medium = "file"
        r = con.sql(sql)
        return r.rows(), sum(c.pages_read for c in r.stats.columns.values()), r.stats.pages_skipped


def test_zorder_prunes_a_filter_on_the_second_key_alone(tmp_path, grid):
    for name, spec in [("sort", "a,b"), ("z", "zorder(a,b)")]:
        ingest([grid], tmp_path / name / "trips", cluster_by=spec)
    ref = pq.read_table(grid)
    on_b = "SELECT COUNT(*), SUM(v) FROM trips WHERE b BETWEEN 300 AND 349"
    on_a = "SELECT COUNT(*), SUM(v) FROM trips WHERE a BETWEEN 300 AND 349"
    s_rows, s_b, s_skip_b = _pages(tmp_path / "sort", on_b)
    z_rows, z_b, z_skip_b = _pages(tmp_path / "z", on_b)
    assert_same_rows(s_rows, duck(on_b, ref), ordered=False)
    assert_same_rows(z_rows, duck(on_b, ref), ordered=False)
    assert s_skip_b < 0.05  # sorted by a: every page holds the whole range of b
    # Z-order pages straddle cells of the curve, so about half of b's pages still overlap
    assert z_b * 2 < s_b and z_skip_b > 0.5
    s_rows, s_a, s_skip_a = _pages(tmp_path / "sort", on_a)
    z_rows, z_a, z_skip_a = _pages(tmp_path / "z", on_a)
    assert_same_rows(z_rows, duck(on_a, ref), ordered=False)
    assert s_skip_a > 0.9 and z_skip_a > 0.7  # the first key still prunes, if less


def test_a_manifest_with_an_unknown_or_keyless_order_is_refused(tmp_path, nully):
    ingest(nully[:1], tmp_path / "t", cluster_by="zorder(k,s)")
    r = subprocess.run([sys.executable, "-m", "bamql.cli", "verify", str(tmp_path / "t")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "clustered by zorder(k, s)" in r.stdout
    edit_manifest(tmp_path / "t", lambda m: m.update(cluster_order="hilbert"))
    with pytest.raises(StoreError, match="cluster order 'hilbert'"):
        open_table(tmp_path / "t")
    edit_manifest(tmp_path / "t", lambda m: m.update(cluster_order="zorder", cluster_by=[]))
    with pytest.raises(StoreError, match="cluster order 'zorder'"):
        open_table(tmp_path / "t")
