"""Query parameters: every placeholder style and value type gives DuckDB's answer for the
same parameterized SQL on the real sample; a value never becomes SQL; bad parameters are
one-line errors."""

from __future__ import annotations

import datetime
import re
from decimal import Decimal

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
import sqlglot

import bamql
from bamql.errors import UsageError
from bamql.sql.params import bind
from tests.conftest import SAMPLES
from tests.reference import assert_same_rows, normalize

D = datetime.datetime
INJECTION = "N' OR 1=1 --"


@pytest.fixture(scope="module")
def con(sample_store):
    with bamql.connect(sample_store, device="cpu") as c:
        yield c


@pytest.fixture(scope="module")
def duck():
    c = duckdb.connect()
    c.register("trips", normalize(pa.concat_tables(pacsv.read_csv(p) for p in SAMPLES)))
    return c


#: (SQL, parameters): each run by bamql and by DuckDB (``:name`` written ``$name`` for DuckDB)
CASES = [
    ("SELECT COUNT(*), AVG(fare_amount) FROM trips WHERE passenger_count = ?", [2]),
    ("SELECT COUNT(*) FROM trips WHERE extra > ?", [-1]),
    ("SELECT COUNT(*) FROM trips WHERE passenger_count < ?", [2**70]),
    ("SELECT SUM(passenger_count) + ? FROM trips", [2**62]),
    ("SELECT COUNT(*) FROM trips WHERE pickup_datetime < ?", ["2019-01-10"]),
    ("SELECT COUNT(*) FROM trips WHERE pickup_location_id = ?", [np.int64(236)]),
    ("SELECT COUNT(*), SUM(tip_amount) FROM trips WHERE trip_distance > ?", [2.5]),
    ("SELECT COUNT(*) FROM trips WHERE trip_distance < ?", [1e-3]),
    ("SELECT COUNT(*) FROM trips WHERE tip_amount > ?", [-0.5]),
    ("SELECT COUNT(*) FROM trips WHERE fare_amount >= ?", [Decimal("10.50")]),
    ("SELECT COUNT(*) FROM trips WHERE extra >= ?", [Decimal("-0.5")]),
    ("SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = ?", ["Y"]),
    ("SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = ?", [INJECTION]),
    ("SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag <> ?", ["it's"]),
    ("SELECT COUNT(*) FROM trips WHERE (trip_distance > 2) = ?", [True]),
    ("SELECT COUNT(*) FROM trips WHERE ?", [False]),
    ("SELECT COUNT(*) FROM trips WHERE passenger_count = ?", [None]),
    ("SELECT COUNT(*) FROM trips WHERE pickup_datetime >= ? AND pickup_datetime < ?",
     [D(2019, 1, 10), D(2019, 1, 20, 12, 30, 0, 500)]),
    ("SELECT COUNT(*) FROM trips WHERE pickup_datetime BETWEEN ? AND ?",
     (datetime.date(2019, 1, 10), datetime.date(2019, 2, 1))),
    ("SELECT COUNT(*) FROM trips WHERE pickup_location_id IN ?", [[236, 237, 161]]),
    ("SELECT COUNT(*) FROM trips WHERE pickup_location_id IN ?", [tuple(range(100))]),
    ("SELECT COUNT(*) FROM trips WHERE pickup_location_id IN ?", [[]]),
    ("SELECT COUNT(*) FROM trips WHERE pickup_location_id IN (?, ?)", [236, 237]),
    ("SELECT COUNT(*) FROM trips WHERE fare_amount > $2 AND passenger_count = $1", [1, 20.0]),
    ("SELECT COUNT(*) FROM trips WHERE fare_amount > $1 OR tip_amount > $1", [30]),
    ("SELECT COUNT(*) FROM trips WHERE fare_amount > $fare AND store_and_fwd_flag = :flag",
     {"fare": 5, "flag": "N"}),
    ("SELECT payment_type, COUNT(*) AS n FROM trips GROUP BY payment_type "
     "HAVING COUNT(*) > ? ORDER BY n DESC LIMIT ?", [50, 2]),
    ("SELECT SUM(fare_amount) * ? AS x, MAX(tip_amount) - ? FROM trips WHERE payment_type = ?",
     [1.5, Decimal("0.25"), 1]),
    ("SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = '?' -- ?\n AND payment_type = ?",
     [1]),
]


@pytest.mark.parametrize(("sql", "params"), CASES, ids=[str(i) for i in range(len(CASES))])
def test_parameters_give_duckdb_answers(con, duck, sql, params):
    plain = params if isinstance(params, dict) else [  # DuckDB binds no NumPy scalars
        v.item() if isinstance(v, np.generic) else v for v in params]
    ref = duck.execute(re.sub(r":(\w+)", r"$\1", sql), plain).fetchall()
    ours = con.sql(sql, params).fetchall()
    assert_same_rows(ours, ref, ordered="ORDER BY" in sql)


def test_repeated_runs_bind_each_time(con, duck):
    sql = "SELECT COUNT(*), AVG(trip_distance) FROM trips WHERE pickup_location_id = ?"
    answers = set()
    for zone in (236, 237, 236, 1, 237):
        ours = con.sql(sql, [zone]).fetchall()
        assert_same_rows(ours, duck.execute(sql, [zone]).fetchall(), ordered=False)
        answers.add(ours[0][0])
    assert len(answers) == 3


def test_explain_takes_parameters(con):
    sql = "SELECT COUNT(*) FROM trips WHERE fare_amount > ?"
    res = con.sql("EXPLAIN " + sql, [12.5])
    assert res.is_explain and "fare_amount > 12.5" in res.plan_text
    assert con.explain(sql, [12.5]) == res.plan_text
    assert con.sql("EXPLAIN ANALYZE " + sql, [12.5]).stats is not None


def test_a_string_value_stays_one_string():
    text = bind("SELECT COUNT(*) FROM t WHERE a = ? AND b = ?", [INJECTION, "x'); DROP --"])
    tree = sqlglot.parse_one(text, read="duckdb")
    strings = [lit.this for lit in tree.find_all(sqlglot.exp.Literal) if lit.is_string]
    assert strings == [INJECTION, "x'); DROP --"]
    assert tree.find(sqlglot.exp.Or) is None


def test_qmarks_are_numbered_in_text_order():
    # the tree lists LIMIT before WHERE; the text's order decides
    text = bind("SELECT COUNT(*) FROM t WHERE a > ? AND b < ? LIMIT ?", [1, 2, 3])
    assert text == "SELECT COUNT(*) FROM t WHERE a > 1 AND b < 2 LIMIT 3"


def test_value_types_become_typed_constants():
    text = bind("SELECT COUNT(*) FROM t WHERE a = ? AND b = ? AND c = ? AND d = ? AND e = ?",
                [2.5, Decimal("2.50"), D(2019, 1, 2, 3, 4, 5, 6), datetime.date(2019, 1, 2), -3])
    assert "a = 2.5e0" in text  # a DOUBLE, as DuckDB binds a float
    assert "b = 2.50" in text  # a DECIMAL
    assert "c = CAST('2019-01-02 03:04:05.000006' AS TIMESTAMP)" in text
    assert "d = CAST('2019-01-02' AS DATE)" in text
    assert "e = -3" in text


def test_without_parameters_text_is_untouched():
    sql = "select count(*) from t where ts > '2019-01-01 00:00:00' -- ?"
    assert bind(sql, None) is sql
    assert sqlglot.parse_one(bind(sql, []), read="duckdb") == sqlglot.parse_one(sql, read="duckdb")


@pytest.mark.parametrize(("sql", "params", "message"), [
    ("SELECT COUNT(*) FROM trips WHERE passenger_count = ?", None, "pass their values"),
    ("SELECT COUNT(*) FROM trips WHERE passenger_count = ?", [1, 2], "1 placeholder (?), got 2"),
    ("SELECT COUNT(*) FROM trips WHERE passenger_count = ?", [], "1 placeholder (?), got 0"),
    ("SELECT COUNT(*) FROM trips", [1], "no placeholders, got 1"),
    ("SELECT COUNT(*) FROM trips WHERE passenger_count = $2", [1, 2], "$1 is not in the query"),
    ("SELECT COUNT(*) FROM trips WHERE passenger_count = $n", {}, "no value for parameter $n"),
    ("SELECT COUNT(*) FROM trips WHERE passenger_count = $n", {"n": 1, "m": 2}, "'m' is not"),
    ("SELECT COUNT(*) FROM trips WHERE passenger_count = $n", [1], "take a dict"),
    ("SELECT COUNT(*) FROM trips WHERE passenger_count = ?", {"n": 1}, "binds $name"),
    ("SELECT COUNT(*) FROM trips WHERE passenger_count = ? AND extra = $1", [1], "mixes"),
    ("SELECT COUNT(*) FROM trips WHERE passenger_count = $1 AND extra = $x", [1], "mixes"),
    ("SELECT COUNT(*) FROM trips WHERE passenger_count = ?", "1", "not str"),
    ("SELECT COUNT(*) FROM trips WHERE passenger_count = ?", 1, "not int"),
    ("SELECT COUNT(*) FROM trips WHERE passenger_count = ?", [b"1"], "parameter 1 is a bytes"),
    ("SELECT COUNT(*) FROM trips WHERE passenger_count = ?", [{1}], "is a set"),
    ("SELECT COUNT(*) FROM trips WHERE passenger_count = ?", [[1]], "only to IN ?"),
    ("SELECT COUNT(*) FROM trips WHERE passenger_count IN ?", [[[1]]], "is a list"),
    ("SELECT COUNT(*) FROM trips WHERE fare_amount < ?", [10**40], "beyond HUGEINT"),
    ("SELECT COUNT(*) FROM trips WHERE fare_amount = ?", [float("nan")], "NaN and infinite"),
    ("SELECT COUNT(*) FROM trips WHERE fare_amount = ?", [float("-inf")], "NaN and infinite"),
    ("SELECT COUNT(*) FROM trips WHERE fare_amount = ?", [Decimal("NaN")], "NaN and infinite"),
    ("SELECT COUNT(*) FROM trips WHERE pickup_datetime > ?",
     [D(2019, 1, 1, tzinfo=datetime.UTC)], "time zone"),
])
def test_bad_parameters_are_one_line_errors(con, sql, params, message):
    with pytest.raises(UsageError) as e:
        con.sql(sql, params)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_value_the_query_cannot_use_is_the_translators_error(con):
    with pytest.raises(bamql.PlanError, match="LIMIT takes a non-negative integer"):
        con.sql("SELECT COUNT(*) FROM trips LIMIT ?", ["ten"])
