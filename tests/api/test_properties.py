"""Property tests: random predicates and aggregates agree with DuckDB; any text gives an
answer or a clear PlanError, never another exception."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bamql
from bamql.errors import UsageError
from tests.conftest import read_orc
from tests.reference import assert_same_rows, duck

NUM = {"trip_distance": (0, 20), "fare_amount": (0, 60), "tip_amount": (0, 10),
       "passenger_count": (0, 6), "payment_type": (1, 4), "pickup_location_id": (1, 265),
       "total_amount": (0, 80), "congestion_surcharge": (0, 3), "vendor_id": (1, 4)}
COLS = sorted(NUM)
KEYS = ["vendor_id", "payment_type", "passenger_count", "store_and_fwd_flag",
        "EXTRACT(HOUR FROM pickup_datetime)"]


@st.composite
def literal(draw, c):
    lo, hi = NUM[c]
    if draw(st.booleans()):
        return str(draw(st.integers(lo, hi)))
    return repr(round(draw(st.floats(lo, hi, allow_nan=False)), 2))


@st.composite
def leaf(draw):
    c = draw(st.sampled_from(COLS))
    kind = draw(st.sampled_from(["cmp", "between", "in", "null", "flag", "time", "sum"]))
    if kind == "cmp":
        return f"{c} {draw(st.sampled_from(['=', '<>', '<', '<=', '>', '>=']))} {draw(literal(c))}"
    if kind == "between":
        return f"{c} BETWEEN {draw(literal(c))} AND {draw(literal(c))}"
    if kind == "in":
        vals = draw(st.lists(literal(c), min_size=1, max_size=4))
        neg = draw(st.sampled_from(["", "NOT "]))
        return f"{c} {neg}IN ({', '.join(vals)})"
    if kind == "null":
        return f"{c} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if kind == "flag":
        return f"store_and_fwd_flag {draw(st.sampled_from(['=', '<>', '<', '>=']))} " \
               f"'{draw(st.sampled_from(['Y', 'N', 'X', 'A']))}'"
    if kind == "time":
        day = draw(st.integers(1, 28))
        month = draw(st.integers(1, 12))
        return f"pickup_datetime {draw(st.sampled_from(['<', '>='])) } " \
               f"TIMESTAMP '2019-{month:02d}-{day:02d} 12:00:00'"
    c2 = draw(st.sampled_from(COLS))
    return f"{c} + {c2} > {draw(literal(c))}"


def predicate(depth=2):
    if depth == 0:
        return leaf()
    sub = predicate(depth - 1)
    return st.one_of(
        leaf(),
        st.tuples(sub, sub).map(lambda t: f"({t[0]} AND {t[1]})"),
        st.tuples(sub, sub).map(lambda t: f"({t[0]} OR {t[1]})"),
        sub.map(lambda p: f"NOT ({p})"),
    )


@st.composite
def aggregate(draw):
    c, c2 = draw(st.sampled_from(COLS)), draw(st.sampled_from(COLS))
    return draw(st.sampled_from([
        "COUNT(*)", f"COUNT({c})", f"SUM({c})", f"AVG({c})", f"MIN({c})", f"MAX({c})",
        f"SUM({c} + {c2})", f"AVG({c} * 2 - {c2})", f"MAX({c} - {c2})",
    ]))


@st.composite
def query(draw):
    aggs = draw(st.lists(aggregate(), min_size=1, max_size=3))
    where = draw(st.one_of(st.none(), predicate()))
    key = draw(st.one_of(st.none(), st.sampled_from(KEYS)))
    sel = ", ".join(([key] if key else []) + aggs)
    sql = f"SELECT {sel} FROM trips"
    if where:
        sql += f" WHERE {where}"
    if key:
        sql += f" GROUP BY {key}"
    return sql


@pytest.fixture(scope="module")
def env(taxi_store, taxi_orc):
    with bamql.connect(taxi_store, device="cpu") as c:
        yield c, read_orc(taxi_orc)


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sql=query())
def test_random_queries_match_duckdb(env, sql):
    con, table = env
    assert_same_rows(con.sql(sql).rows(), duck(sql, table), ordered=False)


WORDS = ["SELECT", "FROM", "WHERE", "GROUP BY", "ORDER BY", "LIMIT", "AVG(", "SUM(", "COUNT(*)",
         "(", ")", ",", "trips", "fare_amount", "nope", "=", "<", "AND", "OR", "NOT", "IN", "NULL",
         "IS", "'Y'", "1", "2.5", "*", "JOIN", "OVER", "DISTINCT", "HAVING", ";", "--", "BETWEEN",
         "EXTRACT(HOUR FROM pickup_datetime)", "store_and_fwd_flag", "TIMESTAMP '2019-01-01'"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(st.text(max_size=60),
                      st.lists(st.sampled_from(WORDS), max_size=14).map(" ".join),
                      st.lists(st.sampled_from(WORDS), max_size=8).map(
                          lambda w: "SELECT AVG(fare_amount) FROM trips WHERE " + " ".join(w))))
def test_any_text_answers_or_fails_clearly(env, text):
    con, _ = env
    try:
        con.sql(text)
    except bamql.PlanError as e:
        assert str(e) and "\n" not in str(e)
    except UsageError as e:  # text with placeholders ($0, ?) and no values for them
        assert "placeholders" in str(e) and "\n" not in str(e)
