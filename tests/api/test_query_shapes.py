"""Constants are kernel arguments: queries that differ only in constants share one compiled
kernel; long IN lists, wide ORs and long expressions neither blow up planning and compiling
nor give wrong answers (every answer against DuckDB)."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import bamql
from bamql.errors import PlanError
from bamql.fused import ir
from bamql.kernels import cpu_loops as kcpu
from bamql.kernels.cpu_loops import filter_source
from bamql.lru import LRU
from bamql.sql.translate import MAX_AGG_NODES
from tests.conftest import SAMPLES
from tests.reference import assert_same_rows, duck


@pytest.fixture(scope="module")
def con(sample_store):
    with bamql.connect(sample_store, device="cpu") as c:
        yield c


@pytest.fixture(scope="module")
def sample_table():
    return pa.concat_tables(pacsv.read_csv(p) for p in SAMPLES)


def _check(con, table, sql):
    assert_same_rows(con.sql(sql).rows(), duck(sql, table), ordered="ORDER BY" in sql)


def test_queries_differing_in_constants_compile_once(con, sample_table):
    shape = ("SELECT COUNT(*), AVG(tip_amount), MAX(total_amount) FROM trips "
             "WHERE fare_amount > {x} AND passenger_count <> {n}")
    _check(con, sample_table, shape.format(x=7.25, n=1))
    before = kcpu.kernel_cache_size()
    rnd = random.Random(5)
    for _ in range(25):
        sql = shape.format(x=round(rnd.uniform(-5, 60), 2), n=rnd.randint(0, 6))
        _check(con, sample_table, sql)
    assert kcpu.kernel_cache_size() == before


def test_constants_in_aggregates_and_timestamps_are_arguments(con, sample_table):
    shape = ("SELECT COUNT(*), SUM(fare_amount * {k} + {c}), MIN(trip_distance - {c}) FROM trips "
             "WHERE pickup_datetime >= TIMESTAMP '2019-01-0{d} 00:00:00'")
    _check(con, sample_table, shape.format(k=2, c=1.5, d=1))
    before = kcpu.kernel_cache_size()
    for k, c, d in ((3, 0.25, 2), (-7, 12.5, 5), (11, -3.75, 9)):
        _check(con, sample_table, shape.format(k=k, c=c, d=d))
    assert kcpu.kernel_cache_size() == before


def test_kernel_source_does_not_grow_with_an_in_list():
    x = ir.Col("x", "int")
    short = ir.InList(x, tuple(ir.Lit(v, "int") for v in range(20)))
    long = ir.InList(x, tuple(ir.Lit(v, "int") for v in range(0, 30_000, 3)))
    s1, p1 = filter_source(short, ["x"], {"x": -32768})
    s2, p2 = filter_source(long, ["x"], {"x": -32768})
    assert s1 == s2
    assert list(p2.arrays()[2]) == list(range(0, 30_000, 3))


@pytest.mark.parametrize("negated", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_long_in_lists_match_duckdb(con, sample_table, negated):
    rnd = random.Random(9)
    vals = rnd.sample(range(-50_000, 50_000), 20_000) + [236, 161, 237, 0, -1]
    lst = ", ".join(map(str, vals))
    neg = "NOT " if negated else ""
    _check(con, sample_table, f"SELECT COUNT(*), SUM(trip_distance) FROM trips "
                              f"WHERE pickup_location_id {neg}IN ({lst})")
    _check(con, sample_table, f"SELECT COUNT(*) FROM trips WHERE fare_amount {neg}IN "
                              f"({lst}) OR passenger_count IN ({', '.join(map(str, vals[:70]))})")


@pytest.mark.slow  # in CI's slow run
def test_in_lists_with_null_and_duplicates_match_duckdb(con, sample_table):
    for lst in ("1, 1, 2, NULL", "NULL", "2.5, 1, 6.5", "-0.0, 0.0"):
        for neg in ("", "NOT "):
            _check(con, sample_table, f"SELECT COUNT(*) FROM trips WHERE fare_amount {neg}IN ({lst})")
            _check(con, sample_table,
                   f"SELECT COUNT(*) FROM trips WHERE passenger_count {neg}IN ({lst})")


def test_an_or_of_equalities_is_one_in_list_and_matches_duckdb(con, sample_table):
    eqs = " OR ".join(f"dropoff_location_id = {v}" for v in range(0, 2000, 2))
    sql = (f"SELECT COUNT(*) FROM trips WHERE {eqs} OR dropoff_location_id IN (1, 3) "
           "OR dropoff_location_id = NULL")
    q = con._translate(sql)
    assert isinstance(q.predicate, ir.InList) and len(q.predicate.values) == 1003
    _check(con, sample_table, sql)
    ands = " AND ".join(f"dropoff_location_id <> {v}" for v in range(0, 400, 2))
    _check(con, sample_table, f"SELECT COUNT(*) FROM trips WHERE {ands} AND fare_amount > 5")


def test_a_wide_or_of_ranges_is_evaluated_without_compiling(con, sample_table):
    rnd = random.Random(3)
    terms = " OR ".join(f"(fare_amount > {round(rnd.uniform(40, 300), 2)} AND "
                        f"tip_amount < {round(rnd.uniform(0, 3), 2)})" for _ in range(300))
    before = kcpu.kernel_cache_size()
    _check(con, sample_table, f"SELECT COUNT(*), AVG(trip_distance) FROM trips WHERE {terms}")
    assert kcpu.kernel_cache_size() <= before + 1  # the aggregation's kernel alone
    nulls = " OR ".join(f"(total_amount < {v} AND congestion_surcharge IS NULL)" for v in range(60))
    _check(con, sample_table, f"SELECT COUNT(*) FROM trips WHERE {nulls}")


def test_one_any_of_merges_only_equalities_of_one_expression():
    x, y = ir.Col("x", "int"), ir.Col("y", "int")
    eq = lambda c, v: ir.Cmp("=", c, ir.Lit(v, "int"))  # noqa: E731
    e = ir.any_of([eq(x, 1), eq(y, 1), ir.Cmp("<", x, ir.Lit(0, "int")), eq(x, 2)])
    assert e == ir.Or((ir.InList(x, (ir.Lit(1, "int"), ir.Lit(2, "int"))), eq(y, 1),
                       ir.Cmp("<", x, ir.Lit(0, "int"))))
    assert ir.any_of([eq(x, 1)]) == eq(x, 1)
    ne = ir.all_of([ir.Cmp("<>", x, ir.Lit(1, "int")), ir.InList(x, (ir.Lit(5, "int"),), negated=True)])
    assert ne == ir.InList(x, (ir.Lit(1, "int"), ir.Lit(5, "int")), negated=True)


def test_a_too_large_aggregate_argument_is_one_line(con):
    sql = "SELECT SUM(fare_amount" + " + 1" * (MAX_AGG_NODES + 5) + ") FROM trips"
    with pytest.raises(PlanError, match="too large") as e:
        con.sql(sql)
    assert "\n" not in str(e.value)


def test_lru_keeps_the_most_recent():
    c = LRU(2)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get("a") == 1  # now the most recent
    c.put("c", 3)
    assert "b" not in c and c.get("a") == 1 and c.get("c") == 3 and len(c) == 2
