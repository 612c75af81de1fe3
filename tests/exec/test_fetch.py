"""``exec.fetch`` on packed stores (``ingest --pack``): every access path gives the values
a plain store gives, and the packed TLC sample answers as DuckDB does, reading fewer bytes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import bamql
from bamql.config import AccessPath, Role
from bamql.exec.fetch import fetch
from bamql.physical.ranges import RowRanges
from bamql.queries import all_queries
from bamql.storage.ingest import ingest
from bamql.storage.iostats import ColumnIO, QueryStats
from bamql.storage.store import PageStore
from tests.conftest import SAMPLES
from tests.reference import assert_same_rows, duck

COLUMNS = ("pickup_location_id", "pickup_datetime", "store_and_fwd_flag", "total_amount",
           "congestion_surcharge", "trip_distance")


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """The TLC sample packed (with a zstd copy, 512 B pages) and plain."""
    d = tmp_path_factory.mktemp("packed")
    ingest(SAMPLES, d / "packed" / "trips", page_size=512, pack=True, compress="zstd")
    ingest(SAMPLES, d / "plain" / "trips", page_size=512)
    return d


def _stats(names) -> QueryStats:
    s = QueryStats("cpu", "file", 0)
    for n in names:
        s.columns[n] = ColumnIO(n, Role.DEPENDENT, AccessPath.GATHER, 1, 0)
    return s


@pytest.mark.parametrize(("path", "compressed"), [
    (AccessPath.GATHER, False), (AccessPath.STREAM, False), (AccessPath.SCAN, False),
    (AccessPath.STREAM, True), (AccessPath.SCAN, True)])  # gathers never read the zstd copy
def test_every_path_reads_the_plain_values(stores, path, compressed):
    with PageStore(stores / "packed" / "trips") as pk, PageStore(stores / "plain" / "trips") as pl:
        assert all(pk.column(n).bits for n in COLUMNS)
        n = pk.rows
        rng = np.random.default_rng(3)
        windows = [RowRanges.whole(n), RowRanges.of([(5, 900), (4000, 4001), (7777, n)]),
                   RowRanges.of([(0, 455), (910, 1365)])]  # whole packed pages of 9 bits
        for window in windows:
            every = np.concatenate([np.arange(a, b) for a, b in window])
            for rows in (every, np.sort(rng.choice(every, 300, replace=False)), every[-1:]):
                for name in COLUMNS:
                    st = _stats([name])
                    got = fetch(pk, pk.column(name), rows, window, path, st, len(rows), compressed)
                    want = pl.read_column_pages(name)[0][rows]
                    assert got.dtype == want.dtype
                    np.testing.assert_array_equal(got, want)
                    assert st.columns[name].bytes_read > 0


@pytest.mark.parametrize("third", [0, pytest.param(1, marks=pytest.mark.slow),
                                   pytest.param(2, marks=pytest.mark.slow)])
def test_the_packed_sample_answers_as_duckdb_with_fewer_bytes(stores, third):
    """Every third query (each compiles its packed store's kernels): the default run one
    third, the slow run the other two."""
    table = pa.concat_tables(pacsv.read_csv(p) for p in SAMPLES)
    queries = all_queries()
    read = {}
    for kind in ("packed", "plain"):
        with bamql.connect(stores / kind, device="cpu") as con:
            total = 0
            for name in sorted(queries)[third::3]:
                sql = queries[name]
                res = con.sql(sql)
                assert_same_rows(res.rows(), duck(sql, table), ordered="ORDER BY" in sql)
                if res.stats is not None:  # a plan tree of several kernels reports none
                    total += res.stats.bytes_read
            read[kind] = total
    assert read["packed"] < read["plain"]
