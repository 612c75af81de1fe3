"""DECIMALs answer exactly, as DuckDB does, or are refused in one line (issue 41, item 1).

A DECIMAL(p, s) column is stored as its unscaled integers (``ColumnMeta.sql_type``); the
translator compares, adds, subtracts, multiplies, sums and groups them as integers, and gives
them back as Arrow decimals of their type. Before, they were doubles: 12345678901234.5678
became 12345678901234.568, and ``d > 12345678901234.5677`` missed it."""

from __future__ import annotations

from decimal import Decimal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.errors import BamqlError, IngestError, PlanError, UsageError
from bamql.storage.ingest import ingest
from tests.reference import assert_same_rows

WIDE = pa.table({
    "d": pa.array([Decimal("12345678901234.5678"), Decimal("99999999999999.9999"), None],
                  pa.decimal128(18, 4)),
    "b": pa.array([True, False, None]),
    "k": pa.array([1, 2, 3], pa.int64()),
})

#: the reproducers of issue 41 and their neighbours
QUERIES = [
    "SELECT COUNT(*) FROM r WHERE d > 12345678901234.5677",
    "SELECT COUNT(*) FROM r WHERE d <> 12345678901234.5677",
    "SELECT COUNT(*) FROM r WHERE d <= 99999999999999.99985",
    "SELECT COUNT(*) FROM r WHERE d = 100000000000000",
    "SELECT COUNT(*) FROM r WHERE d = 99999999999999.9999",
    "SELECT COUNT(*) FROM r WHERE d IN (12345678901234.5678, 100000000000000, NULL)",
    "SELECT COUNT(*) FROM r WHERE d BETWEEN 12345678901234.5679 AND 99999999999999.9999",
    "SELECT COUNT(*) FROM r WHERE d - 12345678901234.5678 = 0",
    "SELECT COUNT(*) FROM r WHERE d + d > 199999999999999.9997",
    "SELECT d FROM r ORDER BY d",
    "SELECT SUM(d), MIN(d), MAX(d), COUNT(d) FROM r",
    "SELECT k, SUM(d) FROM r GROUP BY k ORDER BY k",
    "SELECT d, COUNT(*) FROM r GROUP BY d ORDER BY d",
    "SELECT k FROM r WHERE ABS(d) > 99999999999999.9998 ORDER BY k",
    "SELECT k, COUNT(*) FROM r GROUP BY k HAVING SUM(d) > 12345678901234.5677 ORDER BY k",
    "SELECT b, k FROM r ORDER BY k",
    "SELECT AVG(d), SUM(d) / COUNT(d) FROM r",
]


def _duck(sql: str, t: pa.Table) -> list[tuple]:
    con = duckdb.connect()
    con.register("r", t)
    return con.sql(sql).fetchall()


def _rows(con, sql: str) -> list[tuple]:
    return [tuple(r.values()) for r in con.sql(sql).to_arrow().to_pylist()]


def _same_typed(ours: list[tuple], ref: list[tuple]) -> None:
    """Equal as DuckDB's rows, and a DECIMAL where DuckDB gives one (not a close double)."""
    assert_same_rows(ours, ref, ordered=True)
    for r1, r2 in zip(ours, ref, strict=True):
        for a, b in zip(r1, r2, strict=True):
            assert type(a) is type(b) or a is None or b is None, (r1, r2)
            if isinstance(b, Decimal):
                assert a == b, (r1, r2)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("dec")
    pq.write_table(WIDE, d / "r.parquet")
    ingest([d / "r.parquet"], d / "data" / "r", page_size=512)
    return d


@pytest.mark.parametrize("sql", QUERIES)
def test_issue_41_on_files_in_place(sources, sql):
    with bamql.connect(":memory:") as con:
        ours = _rows(con, sql.replace("FROM r", f"FROM '{sources / 'r.parquet'}' AS r"))
    _same_typed(ours, _duck(sql, WIDE))


@pytest.mark.parametrize("sql", QUERIES)
def test_issue_41_on_an_ingested_store(sources, sql):
    with bamql.connect(sources / "data", device="cpu") as con:
        _same_typed(_rows(con, sql), _duck(sql, WIDE))


@pytest.mark.parametrize("sql", QUERIES[:12])
def test_issue_41_on_a_registered_arrow_table(tmp_path, monkeypatch, sql):
    monkeypatch.setenv("BAMQL_FILE_CACHE", str(tmp_path))
    with bamql.connect(":memory:") as con:
        con.register("r", WIDE)
        _same_typed(_rows(con, sql), _duck(sql, WIDE))


def test_results_keep_the_source_types(sources):
    """SELECT d is DECIMAL(18,4), MIN/MAX too, SUM DECIMAL(38,4), AVG a DOUBLE; a BOOLEAN
    column is a bool, and DESCRIBE says so, as DuckDB's do."""
    with bamql.connect(sources / "data", device="cpu") as con:
        t = con.sql("SELECT d, b, k FROM r").to_arrow()
        assert t.schema.types == [pa.decimal128(18, 4), pa.bool_(), pa.int64()]
        assert t.column("d").to_pylist() == WIDE["d"].to_pylist()
        assert t.column("b").to_pylist() == [True, False, None]
        a = con.sql("SELECT SUM(d), MIN(d), MAX(d), AVG(d), MIN(b) FROM r").to_arrow()
        assert a.schema.types == [pa.decimal128(38, 4), pa.decimal128(18, 4),
                                  pa.decimal128(18, 4), pa.float64(), pa.bool_()]
        assert a.column(0).to_pylist() == [Decimal("112345678901234.5677")]
        desc = {r[0]: r[1] for r in con.sql("DESCRIBE r").rows()}
        assert desc == {"d": "DECIMAL(18,4)", "b": "BOOLEAN", "k": "BIGINT"}
        grouped = con.sql("SELECT b, COUNT(*) FROM r GROUP BY b ORDER BY b").to_arrow()
        assert grouped.column(0).type == pa.bool_()
    with bamql.connect(":memory:") as con:
        desc = con.sql(f"DESCRIBE SELECT d, b FROM '{sources / 'r.parquet'}'").rows()
        assert [r[1] for r in desc] == ["DECIMAL(18,4)", "BOOLEAN"]


def test_a_decimal_of_fifteen_digits_or_less_compares_exactly_with_any_constant(tmp_path):
    """Narrow DECIMALs too: a constant of more digits than a double holds, and arithmetic
    whose double is off by an ulp (0.1 * 3 = 0.30000000000000004), compare as DuckDB does."""
    t = pa.table({"d": pa.array([Decimal("0.1"), Decimal("0.2"), Decimal("0.3"), None],
                                pa.decimal128(10, 1)),
                  "e": pa.array([Decimal("0.123456"), Decimal("1.000001"), Decimal("2.5"),
                                 Decimal("-3")], pa.decimal128(12, 6))})
    pq.write_table(t, tmp_path / "n.parquet")
    f = f"'{tmp_path / 'n.parquet'}'"
    with bamql.connect(":memory:") as con:
        for where in ("d * 3 = 0.3", "d + 0.2 = 0.3", "d < 0.10000000000000000001",
                      "d > 0.09999999999999999999", "e < 0.12345600000000000001",
                      "e = 0.1234560000000000000001", "d + e = 3.0", "d IN (0.1, 0.30000000000000000001)",
                      "-d = -0.2", "d - e > -0.023456"):
            sql = f"SELECT COUNT(*) FROM {f} WHERE {where}"
            assert _rows(con, sql) == duckdb.sql(sql).fetchall(), sql
        sql = f"SELECT SUM(d), SUM(e), MIN(e), MAX(d), SUM(d * 3) FROM {f}"
        _same_typed(_rows(con, sql), duckdb.sql(sql).fetchall())


def test_the_plan_tree_computes_decimals_exactly(sources, tmp_path):
    # a window runs in the plan tree: its scan reads the DECIMAL exactly, its filter and
    # arithmetic keep it a DECIMAL, a decimal constant beside it is one too
    t = pa.table({"d": pa.array([Decimal("0.1"), Decimal("0.2"), None], pa.decimal128(10, 1))})
    pq.write_table(t, tmp_path / "n.parquet")
    f = f"'{tmp_path / 'n.parquet'}'"
    with bamql.connect(":memory:") as con:
        for sql in (f"SELECT COUNT(*) FROM (SELECT d, row_number() OVER () AS n FROM {f}) "
                    "WHERE d * 3 = 0.3",
                    f"SELECT d * 3, d < 0.10000000000000000001, d / 3, row_number() OVER () "
                    f"FROM {f} ORDER BY 4"):
            _same_typed(_rows(con, sql), duckdb.sql(sql).fetchall())
        sql = f"SELECT d, row_number() OVER () FROM '{sources / 'r.parquet'}' ORDER BY 2"
        _same_typed(_rows(con, sql), duckdb.sql(sql).fetchall())


def test_a_decimal_of_more_than_38_digits_is_refused_in_one_line(tmp_path):
    t = pa.table({"big": pa.array([Decimal(10**45)], pa.decimal256(50, 0))})
    pq.write_table(t, tmp_path / "b.parquet")
    with pytest.raises(IngestError) as e:
        ingest([tmp_path / "b.parquet"], tmp_path / "data" / "b")
    msg = str(e.value)
    assert "\n" not in msg and "'big'" in msg and "DECIMAL(50,0)" in msg
    assert "more than 38 digits" in msg
    with bamql.connect(":memory:") as con, pytest.raises(bamql.errors.BamqlError, match="'big'"):
        con.sql(f"SELECT big FROM '{tmp_path / 'b.parquet'}'")
    # a DECIMAL(38, s) whose values fit int64 is kept as int64, exactly
    ok = pa.table({"d": pa.array([Decimal("123456789012345.6789")], pa.decimal128(38, 4))})
    pq.write_table(ok, tmp_path / "ok.parquet")
    with bamql.connect(":memory:") as con:
        got = con.sql(f"SELECT d, SUM(d) FROM '{tmp_path / 'ok.parquet'}' GROUP BY d").rows()
    assert got == [(Decimal("123456789012345.6789"), Decimal("123456789012345.6789"))]


@pytest.mark.parametrize("expr, what", [
    ("FLOOR(d)", "FLOOR"), ("CASE WHEN k > 1 THEN d ELSE 0 END", "CASE"),
])
def test_a_double_of_a_wide_decimal_where_duckdb_keeps_it_exact_is_refused(sources, expr, what):
    with bamql.connect(sources / "data", device="cpu") as con:
        with pytest.raises(PlanError) as e:
            con.sql(f"SELECT {expr} FROM r")
    msg = str(e.value)
    assert "\n" not in msg and "'d'" in msg and "15 significant digits" in msg and what in msg
    # a double asked for is DuckDB's double (float(integers) / 10**scale)
    with bamql.connect(sources / "data", device="cpu") as con:
        sql = "SELECT CAST(d AS DOUBLE), d / 3 FROM r ORDER BY k"
        assert_same_rows(_rows(con, sql), _duck(sql, WIDE), ordered=True)


def test_a_wide_decimals_median_is_that_decimal(sources):
    """A DECIMAL's median is a DECIMAL of its type in DuckDB, exact past a double's digits."""
    with bamql.connect(sources / "data", device="cpu") as con:
        sql = "SELECT k, MEDIAN(d), quantile_cont(d, 0.3) FROM r GROUP BY k ORDER BY k"
        _same_typed(_rows(con, sql), _duck(sql, WIDE))


def test_a_computed_decimal_beside_a_constant_a_double_cannot_hold_is_refused(tmp_path):
    t = pa.table({"d": pa.array([Decimal("0.1")], pa.decimal128(10, 1)), "k": [1]})
    pq.write_table(t, tmp_path / "n.parquet")
    with bamql.connect(":memory:") as con, pytest.raises(PlanError) as e:
        con.sql(f"SELECT COUNT(*) FROM '{tmp_path / 'n.parquet'}' "
                "WHERE FLOOR(d) < 0.10000000000000000001")
    assert "\n" not in str(e.value) and "'d'" in str(e.value)


def test_a_wide_decimal_of_a_registered_table_is_refused_in_a_join(tmp_path):
    from bamql.sql.dimensions import dimension

    dim = dimension("prices", pa.table({"id": [1, 2], "p": WIDE["d"].slice(0, 2)}))
    assert dim.decimals == {"p": ("DECIMAL(18,4)", True)}
    pq.write_table(pa.table({"id": pa.array([1, 2, 2], pa.int64())}), tmp_path / "f.parquet")
    with bamql.connect(":memory:") as con:
        con.register("prices", pa.table({"id": [1, 2], "p": WIDE["d"].slice(0, 2)}))
        with pytest.raises((PlanError, UsageError)) as e:
            con.sql(f"SELECT COUNT(*) FROM '{tmp_path / 'f.parquet'}' t JOIN prices q "
                    "ON t.id = q.id WHERE q.p > 5")
        assert "\n" not in str(e.value) and "15 significant digits" in str(e.value)


def test_a_decimal_join_key_joins_in_the_plan_tree(tmp_path):
    """The kernels' joins take integer keys only: a DECIMAL key joins in the plan tree."""
    pq.write_table(WIDE, tmp_path / "r.parquet")
    dim = pa.table({"key": pa.array([Decimal("12345678901234.5678"), Decimal("2"), None],
                                    pa.decimal128(20, 4))})
    sql = f"SELECT COUNT(*), SUM(dim.key) FROM '{tmp_path / 'r.parquet'}' t JOIN dim ON t.d = dim.key"
    with bamql.connect(":memory:") as con:
        con.register("dim", dim)
        ours = con.sql(sql).rows()
    assert ours[0][0] == 1
    ref = duckdb.connect()
    ref.register("dim", dim)
    assert_same_rows(ours, ref.sql(sql).fetchall(), ordered=False)


def _gpu_reason() -> str | None:
    from bamql.api.session import gpu_unavailable_reason

    return gpu_unavailable_reason()


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["host", "gpu", "file"])
def test_issue_41_on_the_gpu(sources, backend):
    """The same answers from the GPU kernels (the integers compared and summed there)."""
    reason = _gpu_reason()
    if reason is not None:
        pytest.skip(f"no GPU: {reason}")
    with bamql.connect(sources / "data", device="gpu", backend=backend) as con:
        for sql in QUERIES:
            _same_typed(_rows(con, sql), _duck(sql, WIDE))


# -- DECIMALs of more than 18 digits: stored in 16 bytes, answered by the plan tree ----------

#: the reproducer of the task: a DECIMAL(22,2) that no int64 holds
REPRO = pa.table({"d": pa.array([Decimal("12345678901234567890.12"), Decimal("-1.5"), None],
                                pa.decimal128(22, 2))})

#: scales 0..10, values near +-10**37 (at scale s: 38 - s integer digits at most), NULLs,
#: beside a narrow DECIMAL, a DECIMAL(38,2) whose values all fit int64, and a group key
_BIG = 10**37


def _dec(unscaled: int, s: int) -> Decimal:
    """``unscaled / 10**s`` exactly (``Decimal.scaleb`` rounds to the context's 28 digits)."""
    return Decimal(f"{unscaled}E-{s}")


def _wide_values(s: int) -> list[Decimal | None]:
    return [_dec(_BIG + 7, s), _dec(-_BIG - 3, s), _dec(_BIG - 1, s), _dec(-_BIG + 1, s), None,
            _dec(15, 1) if s else Decimal(2), Decimal(0), None, _dec(_BIG + 7, s)]


EDGE = pa.table({
    **{f"w{s}": pa.array(_wide_values(s), pa.decimal128(38, s)) for s in range(11)},
    "m": pa.array([_dec(-2**63 + 1, 2), _dec(2**63 - 1, 2), None, Decimal(1),
                   Decimal("-0.5"), Decimal(3), Decimal(4), Decimal(5), Decimal(6)],
                  pa.decimal128(38, 2)),
    "n": pa.array([Decimal("1.25"), None, Decimal("-3.5"), Decimal("0"), Decimal("9.99"),
                   Decimal("1.25"), Decimal("2"), Decimal("-1"), Decimal("4")],
                  pa.decimal128(10, 2)),
    "k": pa.array([1, 2, 1, 2, 3, 1, None, 2, 3], pa.int64()),
})


def _wide_queries(c: str, s: int) -> list[str]:
    """Filters, projection, aggregates, GROUP BY and ORDER BY of wide column ``c`` (scale
    ``s``), each with a constant of its own digits."""
    big, near, neg = (format(_dec(x, s), "f") for x in (_BIG + 7, _BIG + 6, -_BIG - 3))
    return [
        f"SELECT {c} FROM r",
        f"SELECT {c}, k, n FROM r ORDER BY {c}, k",
        f"SELECT k, {c} FROM r ORDER BY {c} DESC NULLS FIRST, k",
        f"SELECT COUNT(*), COUNT({c}), MIN({c}), MAX({c}), SUM({c}), AVG({c}) FROM r",
        f"SELECT k, COUNT({c}), MIN({c}), MAX({c}), SUM({c}), AVG({c}), SUM(n), MIN(m) "
        f"FROM r GROUP BY k ORDER BY k",
        f"SELECT k FROM r WHERE {c} = {big} ORDER BY k",
        f"SELECT k FROM r WHERE {c} <> {big} ORDER BY k",
        f"SELECT COUNT(*) FROM r WHERE {c} < {near}",
        f"SELECT COUNT(*) FROM r WHERE {c} <= {neg}",
        f"SELECT COUNT(*) FROM r WHERE {c} > {near}",
        f"SELECT COUNT(*) FROM r WHERE {c} >= 0",
        f"SELECT COUNT(*) FROM r WHERE {c} BETWEEN {neg} AND {near}",
        f"SELECT COUNT(*) FROM r WHERE {c} IN ({big}, 0, {neg})",
        f"SELECT COUNT(*) FROM r WHERE {c} NOT IN ({big}, 0)",
        f"SELECT COUNT(*) FROM r WHERE {c} IS NULL",
        f"SELECT SUM(n), COUNT(*) FROM r WHERE {c} IS NOT NULL AND k > 1",
        f"SELECT k, {c} FROM r WHERE n > 0 AND {c} < {big} ORDER BY k, {c}",
        f"SELECT {c} * 2, {c} * k, n * k, k FROM r ORDER BY k, 1",  # DuckDB's types
        f"SELECT COUNT(*) FROM r WHERE {c} <> k",  # beside a BIGINT: 38 + s digits, exactly
        f"SELECT k FROM r WHERE {c} > k OR n IS NULL ORDER BY k",
    ]


def _duck_arrow(sql: str, t: pa.Table) -> pa.Table:
    con = duckdb.connect()
    con.register("r", t)
    out = con.sql(sql).arrow()
    return out.read_all() if hasattr(out, "read_all") else out


def _same_as_duckdb(con, sql: str, ours_sql: str, t: pa.Table) -> None:
    """Our answer equals DuckDB's exactly: the same rows, values and Arrow types."""
    ours, ref = con.sql(ours_sql).to_arrow(), _duck_arrow(sql, t)
    assert ours.schema.types == ref.schema.types, (sql, ours.schema, ref.schema)
    got = [tuple(r.values()) for r in ours.to_pylist()]
    want = [tuple(r.values()) for r in ref.to_pylist()]
    assert got == want, (sql, got, want)


@pytest.fixture(scope="module")
def wide_sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("wide")
    pq.write_table(REPRO, d / "repro.parquet")
    pq.write_table(EDGE, d / "edge.parquet", row_group_size=4)
    ingest([d / "repro.parquet"], d / "data" / "repro", page_size=512)
    ingest([d / "edge.parquet"], d / "data" / "r", page_size=512)
    return d


def test_the_reproducer_answers_exactly(wide_sources):
    f = wide_sources / "repro.parquet"
    queries = ["SELECT SUM(d) FROM r", "SELECT d FROM r", "SELECT MIN(d), MAX(d), AVG(d) FROM r",
               "SELECT COUNT(*) FROM r WHERE d > 12345678901234567890.11"]
    with bamql.connect(":memory:") as con:
        for sql in queries:
            _same_as_duckdb(con, sql, sql.replace("FROM r", f"FROM '{f}'"), REPRO)
    with bamql.connect(wide_sources / "data", device="cpu") as con:
        for sql in queries:
            _same_as_duckdb(con, sql, sql.replace("FROM r", "FROM repro"), REPRO)
        assert con.sql("SELECT SUM(d) FROM repro").rows() == [(Decimal("12345678901234567888.62"),)]
        assert con.sql("DESCRIBE repro").rows()[0][1] == "DECIMAL(22,2)"
        # the store holds it in 16 bytes a value; a DECIMAL(38,2) whose values fit stays int64
        st = con.store("r").parts[0]
        assert st.column("w2").wide and st.column("w2").dtype == "V16"
        assert not st.column("m").wide and st.column("m").dtype == "int64"


@pytest.mark.parametrize("scale", range(11))
def test_wide_decimals_on_a_file_in_place(wide_sources, scale):
    f = wide_sources / "edge.parquet"
    with bamql.connect(":memory:") as con:
        for sql in _wide_queries(f"w{scale}", scale):
            _same_as_duckdb(con, sql, sql.replace("FROM r", f"FROM '{f}' AS r"), EDGE)


@pytest.mark.parametrize("scale", range(11))
def test_wide_decimals_on_an_ingested_store(wide_sources, scale):
    with bamql.connect(wide_sources / "data", device="cpu") as con:
        for sql in _wide_queries(f"w{scale}", scale):
            _same_as_duckdb(con, sql, sql, EDGE)


def test_a_decimal_38_whose_values_fit_int64_answers_as_before(wide_sources):
    """Column ``m`` is DECIMAL(38,2) with values to +-(2**63 - 1): int64, the fused kernels."""
    with bamql.connect(wide_sources / "data", device="cpu") as con:
        for sql in ("SELECT SUM(m), MIN(m), MAX(m), COUNT(m) FROM r",
                    "SELECT k, SUM(m) FROM r GROUP BY k ORDER BY k",
                    "SELECT COUNT(*) FROM r WHERE m > 92233720368547758.06",
                    "SELECT m FROM r ORDER BY m"):
            _same_as_duckdb(con, sql, sql, EDGE)
            assert "Scan" not in con.explain(sql) or "18 digits" not in con.explain(sql)


def test_a_wide_decimal_of_a_registered_table(tmp_path, monkeypatch):
    monkeypatch.setenv("BAMQL_FILE_CACHE", str(tmp_path))
    with bamql.connect(":memory:") as con:
        con.register("r", EDGE)
        for sql in _wide_queries("w3", 3)[:6]:
            _same_as_duckdb(con, sql, sql, EDGE)


def test_explain_says_where_a_wide_decimal_is_read(wide_sources):
    with bamql.connect(wide_sources / "data", device="cpu") as con:
        txt = con.explain("SELECT k, SUM(w2) FROM r WHERE k > 1 GROUP BY k")
    assert "more than 18 digits" in txt and "read whole into Arrow" in txt


@pytest.mark.parametrize("sql, words", [
    ("SELECT w2 * w2 FROM r", "Overflow in multiplication of DECIMAL(38)"),  # as DuckDB
    ("SELECT SUM(w0 * 9) FROM r WHERE w0 > 0", "Overflow in SUM of DECIMAL"),  # as DuckDB
])
def test_what_a_wide_decimal_does_not_answer_is_refused_in_one_line(wide_sources, sql, words):
    with bamql.connect(wide_sources / "data", device="cpu") as con, \
            pytest.raises(BamqlError) as e:
        con.sql(sql)
    assert "\n" not in str(e.value) and words in str(e.value)


def test_a_wide_decimals_quantiles_are_duckdbs(wide_sources):
    """A DECIMAL(38)'s quantiles are DECIMAL(38) in DuckDB, interpolated in its integers."""
    with bamql.connect(wide_sources / "data", device="cpu") as con:
        for sql in ("SELECT MEDIAN(w2), quantile_cont(w2, 0.3), quantile_disc(w2, 0.3) FROM r",
                    "SELECT k, MEDIAN(w3) FROM r GROUP BY k ORDER BY k"):
            _same_as_duckdb(con, sql, sql, EDGE)


def test_rounding_a_wide_decimal_keeps_duckdbs_types(wide_sources):
    """FLOOR, CEIL and ROUND of a DECIMAL(p,s) are DECIMAL(p,0) and DECIMAL(p,min(s,d)) in
    DuckDB; the plan tree gives them so."""
    with bamql.connect(wide_sources / "data", device="cpu") as con:
        for sql in ("SELECT FLOOR(w3), CEIL(w3), ROUND(w3), ROUND(w3, 1), ROUND(w3, 5), "
                    "ROUND(w3, -2), ABS(w3), -w3, w3 + 1 FROM r",
                    "SELECT FLOOR(n), CEIL(n), ROUND(n, 1), k FROM r WHERE w1 IS NOT NULL "
                    "ORDER BY k, n"):
            _same_as_duckdb(con, sql, sql, EDGE)


def test_a_wide_decimal_store_verifies(wide_sources):
    from bamql.storage.partitioned import open_table

    with open_table(wide_sources / "data" / "r") as table:
        assert table.verify() == []


_SIM_SCRIPT = """
import sys
from pathlib import Path
import bamql, duckdb, pyarrow.parquet as pq

d = Path(sys.argv[1])
t = pq.read_table(d / "edge.parquet")
ref = duckdb.connect()
ref.register("r", t)
queries = [
    "SELECT k, SUM(w5), MIN(w5), MAX(w5), COUNT(w5), AVG(w5) FROM r GROUP BY k ORDER BY k",
    "SELECT COUNT(*) FROM r WHERE w9 > 0 AND k <> 2",
    "SELECT w2, k FROM r ORDER BY w2 DESC, k",
    "SELECT k, SUM(m), SUM(n) FROM r GROUP BY k ORDER BY k",  # narrow: the GPU kernels
]
for backend in ("gpu", "host", "file"):
    with bamql.connect(d / "data", device="gpu", backend=backend, cache="64KiB") as con:
        assert con.device == "gpu" and "simulator" in con.note
        for q in queries:
            got = con.sql(q).to_arrow()
            want = ref.sql(q).arrow()
            want = want.read_all() if hasattr(want, "read_all") else want
            assert got.schema.types == want.schema.types, (q, got.schema, want.schema)
            assert got.to_pylist() == want.to_pylist() or [list(r.values()) for r in
                got.to_pylist()] == [list(r.values()) for r in want.to_pylist()], q
print("ok")
"""


def test_a_gpu_session_answers_wide_decimals_in_the_simulator(wide_sources):
    """A GPU session (numba's CUDA simulator) answers a wide DECIMAL through the plan tree's
    Arrow operators and the narrow columns beside it through its kernels, on each backend."""
    pytest.importorskip("numba.cuda")
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", _SIM_SCRIPT, str(wide_sources)], env=env,
                       capture_output=True, text=True, timeout=600,
                       cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]


def test_a_128_bit_sum_becomes_its_decimal_exactly():
    """The narrow path's SUM beyond int64 (Python integers) keeps every digit: Decimal's
    ``scaleb`` rounded it to 28."""
    import numpy as np

    from bamql.exec.result import decimal_column
    from bamql.fused import ir
    x = 12345678901234567890123456789012345
    e = ir.dec(ir.Col("d", "int"), 2, 0, "d", 38)
    got = decimal_column(np.array([x, -x, 0], dtype=object), np.array([True, True, False]), e)
    assert got.to_pylist() == [_dec(x, 2), _dec(-x, 2), None]


def test_a_negative_constant_of_38_digits_compares_exactly(wide_sources):
    """``-1000...0.3`` (38 digits) is the DECIMAL itself, not its 28-digit rounding."""
    sql = ("SELECT COUNT(*) FROM r WHERE w1 >= -1000000000000000000000000000000000000.3 "
           "AND w1 <= 1000000000000000000000000000000000000.6")
    with bamql.connect(wide_sources / "data", device="cpu") as con:
        _same_as_duckdb(con, sql, sql, EDGE)
        assert con.sql(sql).rows() == [(5,)]
