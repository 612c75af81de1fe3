"""x [NOT] IN (SELECT column FROM <registered table>): the value list it becomes, and the
answers against DuckDB over a registered table with NULL keys and NULL strings."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

import bamql
from bamql.errors import PlanError
from bamql.fused import ir
from bamql.sql.dimensions import dimension
from bamql.sql.joins import translate_joins
from bamql.storage.format import ColumnMeta
from tests.conftest import read_orc

D = pa.table({"k": pa.array([1, 2, None, 161, 236, 7], pa.int64()),
              "s": pa.array(["a", None, "Y", "N", "é", "a"]),
              "f": pa.array([1.0, 2.5, None, 161.0, 0.5, 7.0])})
CATALOG = {"trips": {
    "pickup_location_id": ColumnMeta("pickup_location_id", "int", "int64", 0, 1, 512, min=1, max=265),
    "flag": ColumnMeta("flag", "string", "int8", 0, 1, 512, dictionary=("N", "Y"))}}
KEY = ir.Col("pickup_location_id", "int")


def _pred(where: str) -> ir.Expr:
    q = translate_joins(f"SELECT COUNT(*) FROM trips WHERE {where}", CATALOG, {"d": dimension("d", D)})
    return q.predicate


def test_the_subquery_becomes_the_list_of_its_values():
    assert _pred("pickup_location_id IN (SELECT k FROM d WHERE s = 'a')") == \
        ir.InList(KEY, (ir.Lit(1, "int"), ir.Lit(7, "int")))
    assert _pred("pickup_location_id NOT IN (SELECT k FROM d WHERE k > 100)") == \
        ir.InList(KEY, (ir.Lit(161, "int"), ir.Lit(236, "int")), negated=True)


def test_a_null_in_the_subquery_is_a_null_in_the_list():
    p = _pred("pickup_location_id NOT IN (SELECT k FROM d)")
    assert isinstance(p, ir.InList) and p.negated and ir.Lit(None, "null") in p.values


def test_no_rows_is_false_and_its_negation_true_for_every_row():
    assert _pred("pickup_location_id IN (SELECT k FROM d WHERE k > 1000)") == ir.Lit(False, "bool")
    assert _pred("pickup_location_id NOT IN (SELECT k FROM d WHERE k > 1000)") == \
        ir.Not(ir.Lit(False, "bool"))


def test_string_values_become_dictionary_codes():
    p = _pred("flag IN (SELECT s FROM d WHERE k IS NOT NULL)")
    assert isinstance(p, ir.InList) and {v.value for v in p.values} == {0, 1.5, None}  # N, a, é, NULL


@pytest.mark.parametrize("where, text", [
    ("pickup_location_id IN (SELECT pickup_location_id FROM trips)", "over stored table 'trips'"),
    ("pickup_location_id IN (SELECT k FROM d WHERE k = pickup_location_id)", "correlated"),
    ("pickup_location_id IN (SELECT k FROM d x WHERE k = trips.pickup_location_id)", "correlated"),
    ("pickup_location_id IN (SELECT k FROM nope)", "unknown table 'nope'"),
    ("pickup_location_id IN (SELECT k, f FROM d)", "exactly one column"),
    ("pickup_location_id IN (SELECT k + 1 FROM d)",
     "of an expression is not supported by the fused kernels"),
    ("pickup_location_id IN (SELECT k FROM d ORDER BY k LIMIT 2)", "ORDER BY"),
    ("pickup_location_id IN (SELECT k FROM d WHERE k IN (SELECT k FROM d))", "registered tables only"),
    ("pickup_location_id IN (SELECT MAX(k) FROM d)",
     "of an expression is not supported by the fused kernels"),
    ("pickup_location_id = (SELECT MAX(k) FROM d)", "SUBQUERY is not supported"),
])
def test_what_subqueries_refuse(where, text):
    with pytest.raises(PlanError) as e:
        _pred(where)
    assert text in str(e.value) and "\n" not in str(e.value)


QUERIES = [
    "SELECT COUNT(*) FROM trips WHERE pickup_location_id IN (SELECT k FROM d)",
    "SELECT COUNT(*) FROM trips WHERE pickup_location_id NOT IN (SELECT k FROM d)",
    "SELECT COUNT(*) FROM trips WHERE pickup_location_id NOT IN (SELECT k FROM d WHERE s IS NOT NULL)",
    "SELECT COUNT(*) FROM trips WHERE NOT (pickup_location_id NOT IN (SELECT k FROM d))",
    "SELECT COUNT(*) FROM trips WHERE pickup_location_id NOT IN (SELECT k FROM d WHERE s LIKE 'zz%')",
    "SELECT COUNT(*) FROM trips WHERE pickup_location_id IN (SELECT f FROM d WHERE s NOT LIKE 'a')",
    "SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag IN (SELECT s FROM d)",
    "SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag NOT IN (SELECT s FROM d WHERE k > 100)",
    "SELECT vendor_id, COUNT(*) FROM trips WHERE dropoff_location_id IN "
    "(SELECT LocationID FROM zones WHERE Zone ILIKE '%williamsburg%') GROUP BY 1 ORDER BY 1",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_answers_match_duckdb(taxi_store, taxi_orc, sql):
    ref = duckdb.connect()
    ref.register("trips", read_orc(taxi_orc))
    ref.register("d", D)
    with bamql.connect(taxi_store, device="cpu") as con:
        con.register("d", D)
        ref.register("zones", con.dimensions["zones"].table)
        ours = [tuple(r.values()) for r in con.sql(sql).to_arrow().to_pylist()]
    assert ours == ref.execute(sql).fetchall()


@pytest.mark.parametrize("where,text", [
    ("nosuch IN (SELECT k FROM d WHERE k > 1000)", "unknown column 'nosuch'"),
    ("nosuch NOT IN (SELECT k FROM d WHERE k > 1000)", "unknown column 'nosuch'"),
    ("(pickup_location_id + nosuch) IN (SELECT k FROM d WHERE k > 1000)", "unknown column 'nosuch'"),
    ("flag IN (SELECT k FROM d WHERE k > 1000)", "string column compares only with string"),
    ("pickup_location_id IN (SELECT s FROM d WHERE k > 1000)", "cannot compare"),
])
def test_an_empty_subquery_still_binds_and_checks_the_left_side(where, text):
    """The subquery returns no rows: the left side is bound and typed as it is when it does
    (DuckDB binds before it runs anything), not answered FALSE unseen."""
    with pytest.raises(PlanError, match=text):
        _pred(where)
