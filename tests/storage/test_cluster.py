"""Clustered tables (``ingest(cluster_by=...)``): rows sorted by their keys within each
store, every answer as DuckDB's over the sources, and far fewer pages read by a filter on
the keys."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.errors import IngestError, StoreError, UsageError
from bamql.queries import load
from bamql.storage.cluster import _passes, parse_cluster_by, permutation
from bamql.storage.encoding import sentinel_for
from bamql.storage.ingest import append, ingest
from bamql.storage.partitioned import open_table
from bamql.storage.writer import ColumnPlan
from tests.conftest import SAMPLES, edit_manifest, read_orc
from tests.reference import assert_same_rows, duck

NINE = [f"q{i:02d}" for i in range(1, 10)]
KEYS = ("pickup_location_id", "pickup_datetime")


def _parts(path: Path) -> list[pa.Table]:
    with open_table(path) as t:
        return [p.to_table() for p in t.parts]


def _sorted_by(t: pa.Table, keys) -> bool:
    """Whether ``t``'s rows are in the order ``keys`` ascending, NULLs last, gives."""
    order = t.sort_by([(k, "ascending") for k in keys])  # Arrow puts NULLs at the end
    return all(t.column(k).equals(order.column(k)) for k in keys)


@pytest.fixture(scope="module")
def sample_table() -> pa.Table:
    return pa.concat_tables(pacsv.read_csv(p) for p in SAMPLES)


# -- the order ------------------------------------------------------------------------------
def test_permutation_is_lexicographic_nulls_last_and_stable():
    rng = np.random.default_rng(3)
    n = 5000
    a = rng.integers(-3, 4, n).astype(np.int16)
    a[rng.random(n) < 0.1] = sentinel_for(np.int16)
    b = rng.choice([0.5, -1.0, np.nan, 2.0], n)  # a real NaN sorts after the values
    b[rng.random(n) < 0.1] = sentinel_for(np.float64)  # the NULL bit pattern
    perm = permutation([a, b])

    def key(i):
        na, nb = a[i] == sentinel_for(np.int16), b.view(np.int64)[i] == sentinel_for(
            np.float64).view(np.int64)
        return (na, 0 if na else a[i], nb, 0.0 if nb else (np.inf if np.isnan(b[i]) else b[i]), i)

    assert perm.tolist() == sorted(range(n), key=key)  # ties keep the source order


def test_cluster_keys_are_parsed_and_passes_fit_the_budget():
    assert parse_cluster_by(" a, b ").keys == ("a", "b") and parse_cluster_by(None).keys == ()
    assert parse_cluster_by(["a"]).keys == ("a",)
    for bad, text in [("a,a", "twice"), ("a,,b", "empty")]:
        with pytest.raises(UsageError, match=text):
            parse_cluster_by(bad)
    plans = [ColumnPlan(n, "int", np.dtype(d)) for n, d in
             [("a", "int8"), ("b", "int64"), ("c", "int32"), ("d", "int64")]]
    assert _passes(plans, 100, 1000) == [[0, 1], [2], [3]]  # 100+800, 400, 800 bytes
    assert _passes(plans, 100, 1) == [[0], [1], [2], [3]]  # a column alone, even above it


# -- answers on the real sample ---------------------------------------------------------------
@pytest.mark.parametrize("page_size,partitions",
                         [pytest.param(512, 3, marks=pytest.mark.slow), (4096, 1)])
def test_clustered_sample_answers_q1_q9_as_duckdb(tmp_path, sample_table, sample_store,
                                                  page_size, partitions):
    ingest(SAMPLES, tmp_path / "trips", page_size=page_size, partitions=partitions,
           cluster_by=",".join(KEYS), groups="auto")
    with open_table(tmp_path / "trips") as t:
        assert t.verify() == []
        assert all(p.manifest.cluster_by == KEYS for p in t.parts)
        assert len(t.parts) == partitions
    parts = _parts(tmp_path / "trips")
    assert all(_sorted_by(p, KEYS) for p in parts)
    assert not _sorted_by(pa.concat_tables(_parts(sample_store / "trips")), KEYS)
    with bamql.connect(tmp_path, device="cpu") as con, \
            bamql.connect(sample_store, device="cpu") as plain:
        for name in NINE:
            sql = load(name)
            ours = con.sql(sql).rows()
            assert_same_rows(ours, duck(sql, sample_table), ordered="ORDER BY" in sql)
            assert_same_rows(ours, plain.sql(sql).rows(), ordered="ORDER BY" in sql)
        text = "\n".join(r[0] for r in con.sql("EXPLAIN " + load("q06")).rows())
        assert "clustered by pickup_location_id, pickup_datetime" in text


# -- NULL keys, strings, append -----------------------------------------------------------------
GROUPS = ("SELECT k, s, COUNT(*), SUM(x), MIN(x), MAX(x) FROM trips GROUP BY k, s",
          "SELECT COUNT(*), AVG(x) FROM trips WHERE k IN (3, 4) AND s = 'yy'",
          "SELECT COUNT(*), SUM(x) FROM trips WHERE k IS NULL OR s IS NULL",
          "SELECT COUNT(*), SUM(x) FROM trips WHERE k > 100")  # no row: an empty match


def test_null_keys_sort_last_and_answers_match(tmp_path, nully):
    ingest(nully[:1], tmp_path / "trips", page_size=512, cluster_by="s,k")
    t = _parts(tmp_path / "trips")[0]
    assert _sorted_by(t, ["s", "k"]) and t.column("s")[-1].as_py() is None
    ref = pq.read_table(nully[0])
    with bamql.connect(tmp_path, device="cpu") as con:
        for sql in GROUPS:
            assert_same_rows(con.sql(sql).rows(), duck(sql, ref), ordered=False)


def test_append_keeps_a_table_clustered(tmp_path, nully):
    ingest(nully[:1], tmp_path / "trips", page_size=512, partitions=2, cluster_by="k")
    append(nully[1:], tmp_path / "trips")
    with open_table(tmp_path / "trips") as t:
        assert t.verify() == [] and t.rows == 4700
        assert all(p.manifest.cluster_by == ("k",) for p in t.parts)
    assert all(_sorted_by(p, ["k"]) for p in _parts(tmp_path / "trips"))
    ref = pa.concat_tables(pq.read_table(f) for f in nully)
    with bamql.connect(tmp_path, device="cpu") as con:
        for sql in GROUPS:
            assert_same_rows(con.sql(sql).rows(), duck(sql, ref), ordered=False)


# -- pages read -------------------------------------------------------------------------------
def test_clustering_prunes_q6_pages(tmp_path, taxi_orc, taxi_store):
    ingest(taxi_orc, tmp_path / "trips", cluster_by="pickup_location_id")
    sql = load("q06")
    with bamql.connect(tmp_path, device="cpu") as con, \
            bamql.connect(taxi_store, device="cpu") as plain:
        con.medium = plain.medium = "file"
        ours, theirs = con.sql(sql), plain.sql(sql)
    assert_same_rows(ours.rows(), duck(sql, read_orc(taxi_orc)), ordered=False)
    assert ours.stats.rows_matched == theirs.stats.rows_matched > 0
    read = sum(c.pages_read for c in ours.stats.columns.values())
    before = sum(c.pages_read for c in theirs.stats.columns.values())
    assert read * 10 < before  # the matching rows sit in a few pages
    assert ours.stats.pages_skipped > 0.95 > theirs.stats.pages_skipped
    assert f"{ours.stats.pages_skipped:.2%} skipped" in ours.explain()


# -- refusals -------------------------------------------------------------------------------
def test_bad_keys_are_one_line_errors(tmp_path, nully):
    with pytest.raises(IngestError, match="no column 'zone'"):
        ingest(nully, tmp_path / "t", cluster_by="k,zone")
    assert not (tmp_path / "t").exists()
    r = subprocess.run([sys.executable, "-m", "bamql.cli", "ingest", str(nully[0]), "--out",
                        str(tmp_path / "t"), "--cluster-by", "k,k"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 1 and "names column 'k' twice" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    ingest(nully[:1], tmp_path / "t", cluster_by="k")
    r = subprocess.run([sys.executable, "-m", "bamql.cli", "ingest", str(nully[1]), "--out",
                        str(tmp_path / "t"), "--append", "--cluster-by", "s"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "does not go with --append" in r.stderr
    r = subprocess.run([sys.executable, "-m", "bamql.cli", "verify", str(tmp_path / "t")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "clustered by k" in r.stdout


def test_a_manifest_naming_an_unknown_key_is_refused(tmp_path, nully):
    ingest(nully[:1], tmp_path / "t", cluster_by="k")
    edit_manifest(tmp_path / "t", lambda m: m.update(cluster_by=["nope"]))
    with pytest.raises(StoreError, match="clustering keys"):
        open_table(tmp_path / "t")
