"""Hostile inputs for the features of session 30 (files in FROM, joins, parameters,
scalars, aggregates), each answer checked against DuckDB on the same files."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.reference import assert_same_rows, session_rows


def _duck(sql: str, params=None) -> list[tuple]:
    return duckdb.connect().execute(sql, params).fetchall()


def test_narrow_integers_with_nulls_are_stored_wider(session, tmp_path):
    # int8 spanning its whole range plus a NULL is stored as int16, whose NULL sentinel
    # does not fit an int8: the batch is widened before the fill
    t = pa.table({"i8": pa.array([127, -128, None, 5], pa.int8()),
                  "u8": pa.array([255, 0, None, 1], pa.uint8()),
                  "i16": pa.array([32767, -32768, None, 1], pa.int16())})
    pq.write_table(t, tmp_path / "n.parquet")
    sql = (f"SELECT COUNT(*), SUM(i8), MIN(i8), MAX(u8), SUM(i16), COUNT(i16) "
           f"FROM '{tmp_path}/n.parquet' WHERE i8 < 100 OR i8 IS NULL")
    assert_same_rows(session_rows(session, sql), _duck(sql), ordered=True)


def test_order_by_nulls_first(session, tmp_path):
    pq.write_table(pa.table({"k": pa.array([3, None, 1, 1], pa.int64())}), tmp_path / "o.parquet")
    for order in ("k NULLS FIRST", "k DESC NULLS FIRST", "k DESC", "k NULLS LAST", "2, k NULLS FIRST"):
        sql = f"SELECT k, COUNT(*) FROM '{tmp_path}/o.parquet' GROUP BY k ORDER BY {order}"
        assert session_rows(session, sql) == _duck(sql), order


@pytest.mark.parametrize("q", [
    "WITH zones AS (SELECT * FROM '{f}' WHERE k > 0) SELECT COUNT(*), SUM(k) FROM zones",
    "WITH zones AS (SELECT * FROM '{f}') SELECT COUNT(*) FROM zones z WHERE z.k < 100",
    # in its own body and in the CTEs before it, the name is still the registered table
    "WITH zones AS (SELECT * FROM zones WHERE LocationID > 200) SELECT COUNT(*) FROM zones",
    "WITH b AS (SELECT * FROM zones WHERE LocationID < 10), zones AS (SELECT * FROM '{f}') "
    "SELECT COUNT(*) FROM b",
])
def test_a_cte_shadows_a_registered_table_of_its_name(session, tmp_path, q):
    f = tmp_path / "c.parquet"
    pq.write_table(pa.table({"k": pa.array([1, 5, None, -3, 400], pa.int64())}), f)
    sql = q.format(f=f)
    zones = session.dimensions["zones"].table
    con = duckdb.connect()
    con.register("zones", zones)
    assert_same_rows(session_rows(session, sql), con.sql(sql).fetchall(), ordered=True)


def test_population_variance_of_one_non_finite_value(session, tmp_path):
    t = pa.table({"g": [1, 2, 3], "x": [float("inf"), float("nan"), 1.0]})
    pq.write_table(t, tmp_path / "v.parquet")
    sql = f"SELECT g, VAR_POP(x), STDDEV_POP(x) FROM '{tmp_path}/v.parquet' GROUP BY g ORDER BY g"
    assert_same_rows(session_rows(session, sql), _duck(sql), ordered=True)


def test_a_file_whose_name_looks_like_a_glob(session, tmp_path):
    pq.write_table(pa.table({"a": [1, 2, 3]}), tmp_path / "br[a]ck.parquet")
    sql = f"SELECT COUNT(*), SUM(a) FROM read_parquet('{tmp_path}/br[a]ck.parquet')"
    assert_same_rows(session_rows(session, sql), _duck(sql), ordered=True)


@pytest.mark.parametrize("src", ["['{d}/a.parquet', '{d}/a.parquet']", "['{d}/*.parquet', '{d}/a.parquet']",
                                 "['{d}/a.parquet', '{d}/../{n}/a.parquet']"])
def test_a_file_named_twice_is_refused(session, tmp_path, src):
    # DuckDB reads it twice; reading it once would be a wrong answer
    from bamql.errors import BamqlError
    pq.write_table(pa.table({"a": [1, 2, 3]}), tmp_path / "a.parquet")
    with pytest.raises(BamqlError, match="named more than once"):
        session.sql(f"SELECT COUNT(*) FROM read_parquet({src.format(d=tmp_path, n=tmp_path.name)})")


def test_a_rewrite_that_keeps_size_and_mtime_is_not_served_stale(session, tmp_path):
    import os

    p = tmp_path / "e.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3]}), p)
    sql = f"SELECT COUNT(*), SUM(a) FROM '{p}'"
    assert session_rows(session, sql) == _duck(sql)
    st = p.stat()
    pq.write_table(pa.table({"a": [1, 2, 5]}), p)  # same size
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime
    assert p.stat().st_size == st.st_size
    assert_same_rows(session_rows(session, sql), _duck(sql), ordered=True)


def test_deep_nesting_in_a_fresh_process_answers_or_refuses_in_one_line(tmp_path):
    # a fresh interpreter: the files and parameters passes parse before translation raises
    # Python's recursion limit, so 100 levels once failed there with a RecursionError
    import subprocess
    import sys
    import textwrap

    pq.write_table(pa.table({"k": [1, 2, 1]}), tmp_path / "d.parquet")
    code = textwrap.dedent(f"""
        from bamql.config import Config
        from bamql.api.session import Session
        from bamql.errors import PlanError
        s = Session(config=Config(device="cpu", file_cache={str(tmp_path / 'cache')!r}))
        for n, p in ((100, None), (100, [1]), (3000, None), (3000, [1])):
            q = "SELECT COUNT(*) FROM '{tmp_path}/d.parquet' WHERE " + "(" * n + "k = " \\
                + ("?" if p else "1") + ")" * n
            try:
                print(s.sql(q, p).fetchall())
            except PlanError as e:
                print("refused", "too deeply" in str(e))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:4] == ["[(2,)]", "[(2,)]", "refused True", "refused True"]


def test_a_registered_table_with_a_full_range_int8_key(session):
    t = pa.table({"id": pa.array([-128, 127, 1], pa.int8()), "name": ["lo", "hi", "one"]})
    session.register("i8k", t)
    con = duckdb.connect()
    con.register("i8k", t)
    sql = "SELECT name, COUNT(*), SUM(id) FROM i8k GROUP BY 1 ORDER BY 1"
    assert_same_rows(session_rows(session, sql), con.sql(sql).fetchall(), ordered=True)
