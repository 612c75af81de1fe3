"""The join rewrite: dimension conditions -> key sets on the fact key, GROUP BY a dimension
column -> the fact key and a slot map; the answers are checked against DuckDB in
tests/api/test_joins.py and the corpus (tests/sql/joins.sql)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from bamql.errors import PlanError
from bamql.fused import ir
from bamql.fused.domains import Domain
from bamql.sql.dimensions import dimension
from bamql.sql.joins import JoinQuery, translate_joins
from bamql.sql.translate import translate
from bamql.storage.format import ColumnMeta

ZONES = dimension("zones", pa.table({
    "LocationID": [1, 2, 3, 255, 256, 264],
    "Borough": ["EWR", "Queens", "Bronx", "Brooklyn", "Brooklyn", None],
    "Zone": ["Newark Airport", "Jamaica Bay", "Allerton", "Williamsburg (North Side)",
             "Williamsburg (South Side)", "NV"],
}))


def _catalog(nulls: int = 0, lo: int = 1, hi: int = 265) -> dict:
    def col(name, kind, **kw):
        return ColumnMeta(name, kind, "int64" if kind == "int" else "float64", 0, 1, 512, **kw)

    return {"trips": {"pickup_location_id": col("pickup_location_id", "int", nulls=nulls, min=lo, max=hi),
                      "dropoff_location_id": col("dropoff_location_id", "int", min=1, max=300),
                      "vendor_id": col("vendor_id", "int", min=1, max=2),
                      "fare_amount": col("fare_amount", "float", min=0.0, max=99.0)}}


def _join(sql: str, **kw) -> JoinQuery:
    q = translate_joins(sql, _catalog(**kw), {"zones": ZONES})
    assert isinstance(q, JoinQuery)
    return q


JOIN = "FROM trips t JOIN zones z ON t.pickup_location_id = z.LocationID"
LEFT = "FROM trips t LEFT JOIN zones z ON t.pickup_location_id = z.LocationID"
KEY = ir.Col("pickup_location_id", "int")


def test_like_on_a_dimension_becomes_an_in_list_of_keys():
    q = _join(f"SELECT COUNT(*) {JOIN} WHERE z.Zone LIKE 'Williamsburg%'")
    assert q.fact.predicate == ir.InList(KEY, (ir.Lit(255, "int"), ir.Lit(256, "int")))
    assert q.fact.table == "trips" and not q.fact.keys
    assert q.steps == ("inner join zones z on pickup_location_id = z.LocationID: "
                       "z.Zone LIKE 'Williamsburg%' -> pickup_location_id IN (255, 256)",)


def test_an_inner_join_keeps_the_keys_the_dimension_has():
    # the fact column's 1..265 has keys the dimension lacks: the join keeps its keys
    q = _join(f"SELECT COUNT(*) {JOIN}")
    assert isinstance(q.fact.predicate, ir.InList) and len(q.fact.predicate.values) == 6
    # every value in 1..3 has a row and there is no NULL: nothing to drop
    assert _join(f"SELECT COUNT(*) {JOIN}", lo=1, hi=3).fact.predicate is None
    # with NULLs, the keys drop them
    assert _join(f"SELECT COUNT(*) {JOIN}", lo=1, hi=3, nulls=5).fact.predicate == q.fact.predicate
    # three consecutive keys and more are a range
    p = _join(f"SELECT COUNT(*) {JOIN} WHERE z.LocationID < 4").fact.predicate
    assert p == ir.And((ir.Cmp(">=", KEY, ir.Lit(1, "int")), ir.Cmp("<=", KEY, ir.Lit(3, "int"))))


def test_empty_key_sets_are_false_and_left_joins_keep_unmatched_rows():
    assert _join(f"SELECT COUNT(*) {JOIN} WHERE z.Zone LIKE 'nothing%'").fact.predicate == \
        ir.Lit(False, "bool")
    assert _join(f"SELECT COUNT(*) {LEFT}").fact.predicate is None
    # the NULL row an unmatched fact row sees passes IS NULL: keep NULL and unknown keys
    p = _join(f"SELECT COUNT(*) {LEFT} WHERE z.Zone IS NULL").fact.predicate
    assert p == ir.Or((ir.IsNull(KEY), ir.InList(KEY, tuple(ir.Lit(k, "int") for k in
                                                             (1, 2, 3, 255, 256, 264)), negated=True)))
    # a NULL borough in the dimension (264) passes too
    p = _join(f"SELECT COUNT(*) {LEFT} WHERE z.Borough IS NULL OR z.Borough = 'Queens'").fact.predicate
    assert p == ir.Or((ir.IsNull(KEY), ir.InList(KEY, tuple(ir.Lit(k, "int") for k in (1, 3, 255, 256)),
                                                 negated=True)))
    # a condition the NULL row fails is the key set alone
    assert _join(f"SELECT COUNT(*) {LEFT} WHERE z.Borough = 'Queens'").fact.predicate == \
        ir.InList(KEY, (ir.Lit(2, "int"),))


def test_group_by_a_dimension_column_groups_by_the_key_and_maps_slots():
    q = _join(f"SELECT z.Borough, t.vendor_id, COUNT(*) {LEFT} GROUP BY 1, 2")
    assert q.fact.keys == (KEY, ir.Col("vendor_id", "int"))
    assert q.out.keys == (ir.Col("z.Borough", "string"), ir.Col("vendor_id", "int"))
    assert q.regroups
    fact_domains = (Domain(1, 265), Domain(1, 2))
    out_domains = (Domain(0, 4), Domain(1, 2))
    slots = q.slots(fact_domains, out_domains)
    assert len(slots) == 266 * 3

    def slot(key, vendor):  # a fact group's slot (None: NULL)
        return (265 if key is None else key - 1) * 3 + (2 if vendor is None else vendor - 1)

    boroughs = ("Bronx", "Brooklyn", "EWR", "Queens")  # the dictionary, sorted
    for key, name in ((1, "EWR"), (255, "Brooklyn"), (256, "Brooklyn"), (2, "Queens")):
        assert slots[slot(key, 2)] == boroughs.index(name) * 3 + 1
    for key in (264, 100, None):  # a NULL borough, a key without a row, a NULL key
        assert slots[slot(key, 1)] == 4 * 3 + 0
    assert slots[slot(3, None)] == 0 * 3 + 2


def test_identifiers_of_dimensions_match_without_case_and_plain_queries_are_unchanged():
    q = _join(f"SELECT Z.borough, count(*) {JOIN} WHERE z.ZONE = 'NV' GROUP BY 1")
    assert q.out.keys == (ir.Col("z.Borough", "string"),)
    assert q.fact.predicate == ir.InList(KEY, (ir.Lit(264, "int"),))
    plain = translate_joins("SELECT COUNT(*) FROM trips t WHERE t.vendor_id = 1", _catalog(),
                            {"zones": ZONES})
    assert plain == translate("SELECT COUNT(*) FROM trips WHERE vendor_id = 1", _catalog())
    with pytest.raises(PlanError, match="JOIN is not supported"):
        translate(f"SELECT COUNT(*) {JOIN}", _catalog())


@pytest.mark.parametrize("sql, text", [
    (f"SELECT COUNT(*) {JOIN} WHERE z.Borough = 'Queens' OR t.vendor_id = 1",
     "mixes columns"),
    ("SELECT COUNT(*) FROM trips t JOIN zones z ON t.dropoff_location_id = z.LocationID "
     "JOIN zones y ON t.pickup_location_id = y.LocationID WHERE z.Zone IS NULL OR y.LocationID > 5",
     "mixes columns of y and z"),
    (f"SELECT COUNT(z.Zone) {JOIN}", "aggregates over dimension columns"),
    (f"SELECT COUNT(*) {JOIN} WHERE z.Zone LIKE 'a!' ESCAPE '!'", "must not end with its escape"),
    (f"SELECT COUNT(*) {JOIN} WHERE z.Zone LIKE z.Borough", "of a pattern that is not a constant"),
    ("SELECT COUNT(*) FROM trips t SEMI JOIN zones z ON t.pickup_location_id = z.LocationID", "SEMI"),
    ("SELECT COUNT(*) FROM trips t JOIN zones z ON t.pickup_location_id = t.vendor_id", "compare a column"),
    ("SELECT COUNT(*) FROM trips t JOIN zones z ON trips.pickup_location_id = z.LocationID", "may name only"),
])
def test_what_joins_refuse(sql, text):
    with pytest.raises(PlanError, match=text) as e:
        translate_joins(sql, _catalog(), {"zones": ZONES})
    assert "\n" not in str(e.value)


def test_a_dimension_reads_every_column():
    d = dimension("d", pa.table({"k": pa.array([3, 1], pa.int8()), "f": [0.5, None],
                                 "s": pa.array(["b", "a"]).dictionary_encode(),
                                 "dec": pa.array([1, 2], pa.decimal128(5, 0))}))
    assert set(d.metas) == {"k", "f", "s", "dec"} and d.metas["dec"].kind == "float"
    assert d.metas["k"].min == 1 and d.metas["k"].max == 3 and d.metas["f"].nulls == 1
    assert d.metas["s"].dictionary == ("a", "b")
    assert np.array_equal(d.values["s"][0], [1, 0])
