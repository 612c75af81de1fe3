"""Files read in place (``storage.inplace``): the pushed filter keeps a superset of the rows
DuckDB's WHERE keeps, row groups are pruned by it, and queries over Parquet answer as
DuckDB does over the same files (NULLs, NaN, +-inf, -0.0, empty and zero-row files, hive
directories, differing schemas, every row group pruned, the real TLC sample)."""

from __future__ import annotations

import os
import time
from decimal import Decimal

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.api.session import Session
from bamql.config import Config
from bamql.errors import IngestError, PlanError
from bamql.sql.file_refs import bind_files
from bamql.storage.files import FileSet
from bamql.storage.inplace import ReadSpec, pushed_filter, read_in_place
from bamql.storage.partitioned import open_table
from tests.reference import assert_same_rows, session_rows
from tests.sql.corpus import SAMPLE_DIR, read_back

N = 1000


def _table(n: int = N, seed: int = 7) -> pa.Table:
    """Sorted ``id`` (row groups prune on it), and columns with NULLs, NaN, +-inf, -0.0."""
    rng = np.random.default_rng(seed)
    f = np.round(rng.normal(0.0, 3.0, n), 2)
    f[rng.integers(0, n, 40)] = np.nan
    f[:6] = [np.inf, -np.inf, -0.0, 0.0, 1.5, -1.5]
    mask = rng.random(n) < 0.1
    return pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "i": pa.array(rng.integers(-10, 11, n).astype(np.int32), mask=mask),
        "f": pa.array(f, mask=rng.random(n) < 0.05),
        "f32": pa.array(rng.normal(0, 2, n).astype(np.float32)),
        "s": pa.array([["a", "b", "c", "é", "", "B"][j] for j in rng.integers(0, 6, n)],
                      mask=rng.random(n) < 0.1),
    })


#: WHERE clauses: every pushed kind, and kinds that must not be pushed (OR, NOT, casts)
WHERES = [
    "id > 990", "id < 10", "990 < id", "id BETWEEN 100 AND 149", "id >= 2000", "id = 5",
    "i > 5", "i >= 5", "i < -3", "i <= 0", "i = 7", "i <> 7", "i IN (1, 2, NULL)",
    "i IN (NULL)", "i IS NULL", "i IS NOT NULL", "i > 2.5", "i <= 2.5", "i = 2.5",
    "i > -2.5", "i >= -2.5", "i < 2.5", "i = NULL", "i > 2147483648", "i < -2147483649",
    "f > 1", "f >= 0", "f < 0", "f = 0", "f = -0.0", "f <> 0", "f > 1.5", "f <= -1.5",
    "f IN (0, 1.5)", "f > 1e300", "f < 0.07", "f >= 0.07", "f32 > 1", "f32 < 2.5",
    "s = 'b'", "s > 'b'", "s IN ('a', 'é')", "s <> 'a'", "s < 'é'", "s = ''", "s >= 'B'",
    "i > 5 AND s = 'a'", "i > 5 OR f < 0", "NOT (i > 5)", "i = '5'",
    "id > 500 AND f > 0 AND s IS NOT NULL",
]


def _filters(sql: str):
    """The FileRef's filters that ``bind_files`` gives the FROM item of ``sql``."""
    refs = []
    bind_files(sql, [], lambda ref: refs.append(ref) or "t")
    (ref,) = refs
    return ref


@pytest.mark.parametrize("where", WHERES)
def test_the_pushed_filter_keeps_every_row_duckdb_keeps(where):
    t = _table()
    ref = _filters(f"SELECT id FROM 'x.parquet' WHERE {where}")
    expr = pushed_filter(t.schema, ref.filters)
    kept = set(t.filter(expr)["id"].to_pylist()) if expr is not None else set(range(N))
    con = duckdb.connect()
    con.register("t", t)
    duck = {r[0] for r in con.sql(f"SELECT id FROM t WHERE {where}").fetchall()}
    assert duck <= kept


def test_what_is_not_pushed():
    t = _table()
    for where in ("i > 5 OR f < 0", "NOT (i > 5)", "i = '5'", "s = 5", "f > 1e300",
                  "f32 < 2.5", "i IN (NULL)", "i = 2.5"):
        assert pushed_filter(t.schema, _filters(f"SELECT 1 FROM 'x.parquet' WHERE {where}")
                             .filters) is None, where
    # a comparison that keeps NaN in DuckDB keeps it in the pushed filter
    assert "is_nan" in str(pushed_filter(t.schema, _filters(
        "SELECT 1 FROM 'x.parquet' WHERE f > 1").filters))
    assert "is_nan" not in str(pushed_filter(t.schema, _filters(
        "SELECT 1 FROM 'x.parquet' WHERE f < 1").filters))


def test_names_read_are_those_the_statement_mentions():
    assert _filters("SELECT COUNT(*) FROM 'x.parquet'").names == frozenset({"x.parquet"})
    assert _filters("SELECT AVG(F) FROM 'x.parquet' WHERE I > 1").names >= {"f", "i"}
    for star in ("SELECT * FROM 'x.parquet'", "SELECT t.* FROM 'x.parquet' t",
                 "SELECT * EXCLUDE (a) FROM 'x.parquet'"):
        assert _filters(star).names is None, star


def test_row_groups_are_pruned_and_counted(tmp_path):
    t = _table()
    pq.write_table(t, tmp_path / "x.parquet", row_group_size=100)
    files = FileSet.resolve([str(tmp_path / "x.parquet")])
    ref = _filters(f"SELECT SUM(f) FROM '{tmp_path}/x.parquet' WHERE id >= 850")
    made = read_in_place(files, ReadSpec(ref.names, ref.filters), tmp_path / "store")
    r = made.report
    assert (r.row_groups, r.row_groups_read, r.rows, r.rows_read) == (10, 2, N, 150)
    assert r.columns == ("id", "f") and 0 < r.bytes_read < r.column_bytes
    assert "row groups 2 of 10" in made.describe()


#: one query per pushed kind (each compiles a kernel: a few, not every WHERE above)
QUERY_WHERES = ["id > 990", "i IN (1, 2, NULL)", "i > 2.5", "i IS NULL", "f > 1", "f <= -1.5",
                "f = -0.0", "s >= 'B'", "id >= 2000", "i > 5 AND s = 'a'"]


@pytest.mark.parametrize("where", QUERY_WHERES)
def test_queries_answer_as_duckdb_over_the_same_parquet(session, tmp_path, where):
    pq.write_table(_table(), tmp_path / "x.parquet", row_group_size=64)
    sql = (f"SELECT COUNT(*), COUNT(i), SUM(id), MIN(f), MAX(f), MIN(s) "
           f"FROM '{tmp_path}/x.parquet' WHERE {where}")
    assert_same_rows(session_rows(session, sql), duckdb.sql(sql).fetchall(), ordered=False)


def test_the_store_read_in_place_is_not_synced(session, tmp_path, monkeypatch):
    """It lives as long as the session that reads it: no flush to disk, same answers."""
    pq.write_table(_table(), tmp_path / "x.parquet", row_group_size=100)
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
    sql = f"SELECT COUNT(*), SUM(id), MIN(f), MAX(s) FROM '{tmp_path}/x.parquet' WHERE id >= 850"
    assert_same_rows(session_rows(session, sql), duckdb.sql(sql).fetchall(), ordered=False)
    assert synced == []


def test_every_row_group_pruned_gives_empty_aggregates(session, tmp_path):
    pq.write_table(_table(), tmp_path / "x.parquet", row_group_size=100)
    sql = f"SELECT COUNT(*), SUM(id), AVG(f) FROM '{tmp_path}/x.parquet' WHERE id < 0"
    assert session_rows(session, sql) == duckdb.sql(sql).fetchall() == [(0, None, None)]
    assert "row groups 0 of 10" in session.explain(sql).splitlines()[0]


def test_empty_zero_row_and_differing_files(session, tmp_path):
    t = _table()
    d = tmp_path / "d"
    d.mkdir()
    pq.write_table(t.slice(0, 400), d / "a.parquet", row_group_size=50)
    pq.write_table(t.slice(0, 0), d / "b.parquet")  # zero rows
    # another schema: no column s, an extra column g (union_by_name)
    pq.write_table(t.slice(400).drop_columns(["s"]).append_column(
        "g", pa.array(np.arange(N - 400) % 3, pa.int64())), d / "c.parquet", row_group_size=50)
    src = f"read_parquet('{d}/*.parquet', union_by_name = true)"
    ours_src = f"'{d}/*.parquet'"
    for q in ("SELECT COUNT(*), SUM(id), COUNT(s), COUNT(g) FROM {} WHERE id > 380",
              "SELECT COUNT(*) FROM {} WHERE s = 'b'",
              "SELECT COUNT(*), SUM(g) FROM {} WHERE g = 1 AND id < 700",
              "SELECT COUNT(*) FROM {}"):
        assert_same_rows(session_rows(session, q.format(ours_src)), duckdb.sql(q.format(src)).fetchall(),
                         ordered=False)


def test_hive_directories_in_place(session, tmp_path):
    t = _table()
    for k in range(3):
        d = tmp_path / "h" / f"part={k}"
        d.mkdir(parents=True)
        pq.write_table(t.slice(k * 300, 300), d / "x.parquet", row_group_size=60)
    src = f"'{tmp_path}/h/**/*.parquet'"
    for q in ("SELECT part, COUNT(*), SUM(id) FROM {} WHERE part >= 1 AND id > 500 "
              "GROUP BY part ORDER BY part",
              "SELECT COUNT(*) FROM {} WHERE part = 2"):
        sql = q.format(src)
        assert_same_rows(session_rows(session, sql), duckdb.sql(sql).fetchall(), ordered=True)


def test_the_real_tlc_sample_as_parquet(session, tmp_path):
    t = read_back(sorted(SAMPLE_DIR.glob("yellow_tripdata_sample_2019-*.csv")))
    pq.write_table(t, tmp_path / "tlc.parquet", row_group_size=200)
    src = f"'{tmp_path}/tlc.parquet'"
    for where in ("pickup_location_id IN (132, 138) AND fare_amount > 10",
                  "pickup_datetime >= '2019-02-01' AND trip_distance <= 1.5",
                  "store_and_fwd_flag = 'Y' OR passenger_count > 4"):
        sql = (f"SELECT COUNT(*), AVG(trip_distance), SUM(total_amount), MIN(pickup_datetime) "
               f"FROM {src} WHERE {where}")
        assert_same_rows(session_rows(session, sql), duckdb.sql(sql).fetchall(), ordered=False)



def test_cache_files_ingests_whole_and_in_place_does_not(tmp_path):
    pq.write_table(_table(), tmp_path / "x.parquet", row_group_size=100)
    sql = f"SELECT SUM(i) FROM '{tmp_path}/x.parquet' WHERE id < 100"
    for cache_files, want in ((True, "read through a store cached at"),
                              (False, "read in place: row groups 1 of 10")):
        with Session(config=Config(device="cpu", file_cache=tmp_path / f"c{cache_files}",
                                   cache_files=cache_files)) as s:
            assert session_rows(s, sql) == duckdb.sql(sql).fetchall()
            assert want in s.explain(sql).splitlines()[0]
    # the session removes the stores it read in place when it closes
    assert not list((tmp_path / "cFalse" / ".inplace").iterdir())


def test_no_filter_is_pushed_on_a_column_of_differing_types(session, tmp_path):
    # DuckDB compares x in the type that unites the files (double): the int64 2^53 equals
    # the literal 2^53 + 1 there, though not as an int64
    b = 1 << 53
    d = tmp_path / "u"
    d.mkdir()
    pq.write_table(pa.table({"x": pa.array([b, b + 1, 5], pa.int64())}), d / "a.parquet")
    pq.write_table(pa.table({"x": pa.array([2.5, float(b)], pa.float64())}), d / "b.parquet")
    for where in ("x = 9007199254740993", "x >= 9007199254740993", "x < 9007199254740992"):
        sql = f"SELECT COUNT(*) FROM {{}} WHERE {where}"
        assert session_rows(session, sql.format(f"'{d}/*.parquet'")) == duckdb.sql(sql.format(
            f"read_parquet('{d}/*.parquet', union_by_name = true)")).fetchall(), where


def test_decimal_literals_duckdb_reads_as_double_are_not_pushed():
    # more than 38 digits (leading zeros counted): a DOUBLE in DuckDB, where x = 2^53 is
    # >= 9007199254740993.000...
    b = 1 << 53
    t = pa.table({"x": pa.array([b - 1, b, b + 1], pa.int64())})
    for lit in ("9007199254740993.00000000000000000000000", "0" * 30 + "9007199254740993.0"):
        ref = _filters(f"SELECT x FROM 'x.parquet' WHERE x >= {lit}")
        assert pushed_filter(t.schema, ref.filters) is None, lit
        con = duckdb.connect()
        con.register("t", t)
        assert con.sql(f"SELECT COUNT(*) FROM t WHERE x >= {lit}").fetchall() == [(2,)]
    ref = _filters(f"SELECT x FROM 'x.parquet' WHERE x >= {'0' * 20}9007199254740993.0")
    assert pushed_filter(t.schema, ref.filters) is not None  # 37 digits: a DECIMAL


def test_column_names_after_a_files_alias_are_refused(session, tmp_path):
    pq.write_table(pa.table({"b": [1, 2], "a": [3, 4]}), tmp_path / "x.parquet")
    with pytest.raises(PlanError, match="column names after the alias t"):
        session.sql(f"SELECT SUM(b) FROM '{tmp_path}/x.parquet' t(a, b) WHERE a > 2")


def test_within_group_quantiles_over_files(tmp_path):
    # the files' binding writes the statement back as text: WITHIN GROUP must survive it
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"m": [1.0, 2.0, 3.0, None, 7.5], "k": [1, 1, 2, 2, 2]}), path)
    sql = (f"SELECT k, percentile_cont(0.25) WITHIN GROUP (ORDER BY m), "
           f"percentile_disc(0.75) WITHIN GROUP (ORDER BY m) FROM '{path}' GROUP BY k ORDER BY k")
    with bamql.connect(device="cpu") as con:
        assert con.sql(sql).rows() == duckdb.sql(sql).fetchall()
        with pytest.raises(PlanError, match="DESC"):
            con.sql(f"SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY m DESC) FROM '{path}'")


def test_in_place_stores_keep_doubles_plain_and_decimals_scaled(session, tmp_path):
    # a store made for one query skips the pass that finds decimal doubles; a DECIMAL
    # column keeps its exact integers (DuckDB rounds it exactly, half away from zero)
    cents = np.random.default_rng(3).integers(-99_999, 99_999, N)
    cents[:4] = [25, -25, 35, 5]  # ties when rounded to one decimal
    t = pa.table({"f": pa.array(cents / 100), "d": pa.array(
        [Decimal(int(c)).scaleb(-2) for c in cents], pa.decimal128(12, 2), mask=cents % 7 == 0)})
    pq.write_table(t, tmp_path / "x.parquet", row_group_size=300)
    files = FileSet.resolve([str(tmp_path / "x.parquet")])
    made = read_in_place(files, ReadSpec(None), tmp_path / "store")
    with open_table(made.store) as st:
        cols = st.columns
        assert (cols["f"].dtype, cols["f"].scale) == ("float64", 0)
        assert (cols["d"].kind, cols["d"].sql_type) == ("int", "DECIMAL(12,2)")  # exactly
    src = f"'{tmp_path}/x.parquet'"
    for q in ("SELECT SUM(f), AVG(d), MIN(d), MAX(f), COUNT(d) FROM {} WHERE f > -500.5",
              "SELECT ROUND(f, 1) AS r, COUNT(*) FROM {} WHERE f BETWEEN -0.5 AND 0.5 "
              "GROUP BY r ORDER BY r",
              "SELECT SUM(ROUND(f, 1)), SUM(d) FROM {} WHERE d < 0"):
        assert_same_rows(session_rows(session, q.format(src)), duckdb.sql(q.format(src)).fetchall(),
                         ordered="ORDER BY" in q)
    # the DECIMAL's exact rounding (the plan tree reads it as a DECIMAL), never a double's
    q = f"SELECT SUM(ROUND(d, 1)), MIN(ROUND(d, 1)) FROM {src}"
    assert_same_rows(session_rows(session, q), duckdb.sql(q).fetchall(), ordered=False)


def test_files_are_read_at_once_in_their_order(monkeypatch):
    # later files finish first; the answers keep the files' order, and a failure raises
    # the first failing file's error, in the files' order
    import bamql.storage.inplace as inplace

    delay = {0: 0.2, 1: 0.0, 2: 0.1, 3: 0.0}

    def fn(k: int) -> int:
        time.sleep(delay[k])
        if k in bad:
            raise IngestError(f"file {k} is not a readable Parquet file")
        return k * 10

    monkeypatch.setattr(inplace, "_cores", lambda: 2)  # four files on two cores: threads
    bad: set[int] = set()
    assert inplace._each(fn, [0, 1, 2, 3]) == [0, 10, 20, 30]
    bad = {2, 3}
    with pytest.raises(IngestError, match="file 2 "):
        inplace._each(fn, [0, 1, 2, 3])


def test_a_corrupt_file_among_several_is_named(session, tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    t = _table()
    for k in range(3):
        pq.write_table(t, d / f"{k}.parquet", row_group_size=200, compression="none")
    # a page header of file 1's middle row group overwritten: its footer still opens
    md = pq.ParquetFile(d / "1.parquet").metadata
    off = md.row_group(2).column(0).data_page_offset
    raw = bytearray((d / "1.parquet").read_bytes())
    raw[off:off + 64] = b"\xff" * 64
    (d / "1.parquet").write_bytes(bytes(raw))
    with pytest.raises(IngestError) as e:
        session.sql(f"SELECT SUM(id) FROM '{d}/*.parquet'")
    msg = str(e.value)
    assert "1.parquet is not a readable Parquet file" in msg and "\n" not in msg
