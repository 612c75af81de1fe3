"""The CPU executor (``exec.cpu``): a filter that keeps many rows aggregates its morsels
under its mask, one that keeps few compacts its matches first; both give DuckDB's answers,
over NULLs, NaN, several morsels and pages, and neither raises an error of a row the
filter left out."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.exec import cpu
from bamql.kernels import cpu_loops as kcpu
from bamql.storage.ingest import ingest
from tests.reference import assert_same_rows, duck_tables

ROWS = 5000


def _table() -> pa.Table:
    rng = np.random.default_rng(7)
    i = np.arange(ROWS)
    x = rng.normal(10, 5, ROWS).round(2)
    x[i % 97 == 0] = np.nan
    return pa.table({
        "g": pa.array(i % 7, pa.int64()),
        "x": pa.array(x, mask=i % 13 == 0),
        "k": pa.array(rng.integers(-50, 50, ROWS), pa.int64(), mask=i % 17 == 0),
        # past int64 when squared where the filter k > 40 leaves the row out
        "big": pa.array(np.where(i % 5 == 0, 4_000_000_000, 3), pa.int64()),
    })


QUERIES = [
    "SELECT g, COUNT(*), SUM(x), MIN(x), MAX(x), AVG(k) FROM t WHERE x > 5 GROUP BY g ORDER BY g",
    "SELECT COUNT(*), SUM(k) FROM t WHERE x BETWEEN 2 AND 14 AND k >= -10",
    "SELECT g, COUNT(x) FROM t WHERE k <> 3 OR x IS NULL GROUP BY g ORDER BY g",
    "SELECT COUNT(*), SUM(x) FROM t WHERE x > 25",  # few rows: compacted
    "SELECT COUNT(*), SUM(k * 2) FROM t WHERE x * 2 > 0 AND k * 2 > -40",  # arithmetic: compacted
    "SELECT SUM(big * big) FROM t WHERE big < 10",  # the overflowing rows left out
    # keys of a large domain: the kernel's hash table, under the mask too
    "SELECT big, k, COUNT(*), SUM(x) FROM t WHERE x > 5 GROUP BY big, k ORDER BY big, k",
]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("cpu")
    pq.write_table(_table(), d / "t.parquet")
    # 512 B pages and two morsels: several pages and windows per query
    ingest([str(d / "t.parquet")], d / "db" / "t", page_size=512)
    return d / "db"


@pytest.mark.parametrize("parallel", [False, True], ids=["one-thread", "parallel"])
@pytest.mark.parametrize("share", [
    0.0, pytest.param(2.0, marks=pytest.mark.slow)], ids=["masked-where-it-may", "compacted"])
@pytest.mark.parametrize("sql", QUERIES)
def test_masked_and_compacted_morsels_answer_as_duckdb(store, sql, share, parallel, monkeypatch):
    # a small store's kernels run on one thread; PARALLEL_ROWS 0 compiles numba's parallel loops
    monkeypatch.setattr(kcpu, "PARALLEL_ROWS", 0 if parallel else kcpu.PARALLEL_ROWS)
    monkeypatch.setattr(cpu, "MASKED_SHARE", share)
    monkeypatch.setattr(cpu, "MORSEL_ROWS", 2048)
    with bamql.connect(store, device="cpu") as con:
        got = con.sql(sql).rows()
    assert_same_rows(got, duck_tables(sql, {"t": _table()}), ordered="ORDER BY" in sql)


def test_which_filters_aggregate_under_their_mask(store, monkeypatch):
    seen: list[bool] = []
    decide = cpu.masked

    def spy(plan):
        seen.append(decide(plan))
        return seen[-1]

    monkeypatch.setattr(cpu, "masked", spy)
    with bamql.connect(store, device="cpu") as con:
        for sql in QUERIES:
            con.sql(sql)
    # many rows kept: masked; few rows, or a later stage's arithmetic: compacted
    assert seen == [True, True, True, False, False, True, True]


def test_a_filters_constants_do_not_make_a_second_kernel(store):
    """Masked or compacted, a query shape compiles one aggregate kernel (its mask an
    argument): constants that move the filter's selectivity across ``MASKED_SHARE`` do not
    compile another."""
    with bamql.connect(store, device="cpu") as con:
        con.sql("SELECT g, SUM(k) FROM t WHERE x > 5 GROUP BY g")  # keeps most: masked
        before = kcpu.kernel_cache_size()
        con.sql("SELECT g, SUM(k) FROM t WHERE x > 26 GROUP BY g")  # keeps few: compacted
        assert kcpu.kernel_cache_size() == before


def test_explain_says_when_the_aggregate_takes_the_filters_mask(store):
    with bamql.connect(store, device="cpu") as con:
        assert "under the filter's mask" in con.explain(QUERIES[0])
        assert "under the filter's mask" not in con.explain(QUERIES[3])


def test_a_masked_morsel_accounts_the_values_it_needs_as_a_compacted_one(store, monkeypatch):
    """The dependent columns are read at every row under the mask, and needed at the
    matches only: the bytes needed (and read) are the same either way."""
    monkeypatch.setattr(cpu, "MORSEL_ROWS", 2048)
    got = {}
    for share in (0.0, 2.0):
        monkeypatch.setattr(cpu, "MASKED_SHARE", share)
        with bamql.connect(store, device="cpu") as con:
            s = con.sql(QUERIES[0]).stats
        got[share] = (s.bytes_needed, s.bytes_read, s.rows_matched)
    assert got[0.0] == got[2.0]
