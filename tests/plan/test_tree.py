"""The plan tree: translation, the rules that move work into fused kernels, the operators'
answers against DuckDB, and EXPLAIN."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
import sqlglot

import bamql
from bamql.errors import PlanError
from bamql.plan import nodes as n
from bamql.plan.build import Catalog, build
from bamql.plan.rules import optimize
from tests.reference import assert_same_rows, duck_tables


def _catalog(fusable=lambda sql: "OVER" not in sql.upper()) -> Catalog:
    return Catalog({"trips": ("vendor_id", "payment_type", "fare_amount")}, {}, fusable)


def _plan(sql: str, cat: Catalog) -> n.Node:
    return optimize(build(sqlglot.parse_one(sql, read="duckdb"), cat), cat)


def test_a_select_the_kernel_takes_whole_is_one_fused_leaf():
    node = _plan("SELECT vendor_id, COUNT(*) FROM trips GROUP BY 1", _catalog())
    assert isinstance(node, n.Fused)


def test_a_group_by_under_a_window_becomes_a_fused_kernel_and_where_moves_into_it():
    node = _plan("SELECT payment_type, COUNT(*) * 1.0 / SUM(COUNT(*)) OVER () FROM trips "
                 "WHERE fare_amount > 10 GROUP BY 1", _catalog())
    leaves = [x for x in n.walk(node) if isinstance(x, n.Fused)]
    assert len(leaves) == 1 and "fare_amount > 10" in leaves[0].sql and "GROUP BY" in leaves[0].sql
    assert any(isinstance(x, n.Window) for x in n.walk(node))
    assert not any(isinstance(x, n.Scan | n.Filter) for x in n.walk(node))


def test_a_condition_the_kernel_refuses_stays_above_the_scan():
    cat = _catalog(fusable=lambda sql: "upper" not in sql.lower() and "OVER" not in sql.upper())
    node = _plan("SELECT vendor_id, ROW_NUMBER() OVER (ORDER BY fare_amount) FROM trips "
                 "WHERE upper(CAST(vendor_id AS VARCHAR)) = '1' AND fare_amount > 5", cat)
    scan = next(x for x in n.walk(node) if isinstance(x, n.Scan))
    assert [p.sql() for p in scan.predicate] == ["fare_amount > 5"]
    assert any(isinstance(x, n.Filter) and "UPPER" in x.condition.sql().upper() for x in n.walk(node))


@pytest.mark.parametrize("sql", [
    "SELECT vendor_id, fare_amount FROM trips QUALIFY ROW_NUMBER() OVER "
    "(PARTITION BY vendor_id ORDER BY fare_amount DESC) <= 3",
    "SELECT * FROM (SELECT vendor_id, RANK() OVER (PARTITION BY vendor_id ORDER BY fare_amount) "
    "AS r FROM trips) AS t WHERE t.r < 4 AND vendor_id > 0",
    "SELECT * FROM (SELECT vendor_id, ROW_NUMBER() OVER (ORDER BY fare_amount) AS rn FROM trips) "
    "WHERE 3 >= rn",
])
def test_a_filter_on_a_rank_marks_its_window_to_keep_the_top_rows(sql):
    node = _plan(sql, _catalog())
    win = next(x for x in n.walk(node) if isinstance(x, n.Window))
    assert win.keep == 3
    parent = next(x for x in n.walk(node) if win in x.children)
    assert isinstance(parent, n.Filter)  # the ranks are still filtered above the window


@pytest.mark.parametrize("sql", [
    # another function beside the rank, or a rank without an order: every row is needed
    "SELECT * FROM (SELECT vendor_id, ROW_NUMBER() OVER (ORDER BY fare_amount) AS rn, "
    "SUM(fare_amount) OVER () AS s FROM trips) WHERE rn <= 3",
    "SELECT vendor_id FROM trips QUALIFY ROW_NUMBER() OVER (PARTITION BY vendor_id) <= 3",
    "SELECT vendor_id FROM trips QUALIFY DENSE_RANK() OVER (ORDER BY fare_amount) <= 3",
    "SELECT vendor_id FROM trips QUALIFY ROW_NUMBER() OVER (ORDER BY fare_amount) > 3",
])
def test_a_window_the_top_rows_cannot_answer_keeps_every_row(sql):
    node = _plan(sql, _catalog())
    assert all(x.keep is None for x in n.walk(node) if isinstance(x, n.Window))


def test_a_filter_over_a_derived_table_moves_into_its_scan():
    # the kernel takes a WHERE over the table, not the derived table's SELECT whole
    cat = _catalog(fusable=lambda sql: sql.startswith("SELECT COUNT(*)"))
    node = _plan("SELECT * FROM (SELECT vendor_id, fare_amount FROM trips) AS t "
                 "WHERE t.fare_amount > 5", cat)
    scan = next(x for x in n.walk(node) if isinstance(x, n.Scan))
    assert [p.sql() for p in scan.predicate] == ["fare_amount > 5"]
    assert not any(isinstance(x, n.Filter) for x in n.walk(node))


def test_nodes_rebuild_with_new_children():
    leaf = n.Fused("SELECT 1", ("a",))
    f = n.Filter(leaf, sqlglot.exp.true())
    other = n.Fused("SELECT 2", ("a",))
    g = f.with_children(other)
    assert g.child is other and f.child is leaf and g.children == (other,)


@pytest.fixture(scope="module")
def trips(tmp_path_factory) -> tuple[Path, pa.Table]:
    import numpy as np
    import pyarrow.parquet as pq

    rng = np.random.default_rng(7)
    k = 5000
    t = pa.table({
        "vendor_id": pa.array(rng.integers(1, 3, k)),
        "payment_type": pa.array(rng.integers(1, 5, k)),
        "fare_amount": pa.array(np.round(rng.gamma(2.0, 7.0, k), 2)),
        "tip_amount": pa.array(np.round(rng.gamma(1.0, 2.0, k), 2)),
        "pickup_datetime": pa.array(np.datetime64("2019-01-01") + rng.integers(0, 86400 * 30, k)
                                    .astype("timedelta64[s]")).cast(pa.timestamp("us")),
    })
    path = tmp_path_factory.mktemp("tree") / "trips.parquet"
    pq.write_table(t, path)
    return path, t


@pytest.fixture(scope="module")
def con():
    with bamql.connect(None, device="cpu") as c:
        yield c


def _check(con, trips, sql: str) -> None:
    path, t = trips
    ours = con.sql(sql.replace("FROM trips", f"FROM '{path}'")).rows()
    assert_same_rows(ours, duck_tables(sql, {"trips": t}), ordered="ORDER BY" in sql)


@pytest.mark.parametrize("sql", [
    "SELECT payment_type, COUNT(*) AS n, RANK() OVER (ORDER BY COUNT(*) DESC) AS r FROM trips "
    "GROUP BY 1 ORDER BY r, 1",
    "WITH h AS (SELECT EXTRACT(HOUR FROM pickup_datetime) AS hr, COUNT(*) AS n FROM trips "
    "GROUP BY 1) SELECT hr, n, SUM(n) OVER (ORDER BY hr) FROM h ORDER BY hr",
    "SELECT COUNT(*) FROM trips t WHERE fare_amount > (SELECT AVG(u.fare_amount) FROM trips u "
    "WHERE u.payment_type = t.payment_type)",
    "SELECT vendor_id FROM trips WHERE fare_amount > 40 UNION SELECT payment_type FROM trips "
    "WHERE tip_amount > 9 ORDER BY 1",
])
def test_tree_queries_over_files_match_duckdb(con, trips, sql):
    _check(con, trips, sql)


def test_explain_shows_the_tree_and_the_fused_kernel_under_it(con, trips):
    txt = con.explain(f"SELECT payment_type, COUNT(*) * 1.0 / SUM(COUNT(*)) OVER () FROM '{trips[0]}' "
                      "GROUP BY 1")
    assert txt.splitlines()[0].startswith("Project") and "Window" in txt
    assert "FusedKernel" in txt and "Aggregate over" in txt


def test_a_tree_query_over_an_unknown_column_is_one_line(con, trips):
    with pytest.raises(PlanError, match="unknown column 'nosuch'") as e:
        con.sql(f"SELECT nosuch FROM (SELECT vendor_id FROM '{trips[0]}')")
    assert "\n" not in str(e.value)


_NS_T = pa.table({"k": [1, 2, None, 4, None, 2], "v": [1.5, None, float("nan"), 3.5, 9.0, None],
                  "s": ["a", None, "b", None, "c", "a"]})
_NS_R = pa.table({"id": [1, None, 4, 2], "w": [float("nan"), None, 3.5, -0.0],
                  "s2": ["a", "n", None, None], "name": ["A", "N", "D", "B"]})


@pytest.mark.parametrize("kind", ["LEFT", "RIGHT", "FULL", "INNER"])
@pytest.mark.parametrize("on", [
    "t.k IS NOT DISTINCT FROM r.id", "t.s IS NOT DISTINCT FROM r.s2",
    "t.v IS NOT DISTINCT FROM r.w", "t.k IS NOT DISTINCT FROM r.id AND t.s = r.s2",
    "t.k = r.id AND r.s2 IS NOT DISTINCT FROM t.s", "t.k + 0 IS NOT DISTINCT FROM r.id",
])
def test_joins_on_is_not_distinct_from_match_null_to_null_as_duckdb(con, kind, on):
    """IS NOT DISTINCT FROM in ON is a join key whose NULLs match each other (an outer join
    refused it), over integers, strings and doubles with NaN, beside plain equalities."""
    con.register("t", _NS_T)
    con.register("r", _NS_R)
    try:
        sql = f"SELECT t.k, t.v, t.s, r.name FROM t {kind} JOIN r ON {on}"
        assert_same_rows(con.sql(sql).rows(), duck_tables(sql, {"t": _NS_T, "r": _NS_R}),
                         ordered=False)
    finally:
        con.unregister("t")
        con.unregister("r")


def test_outer_joins_with_conditions_on_either_side_match_duckdb(con):
    """An outer join's ON conditions on one side (the kept side's too): rows where they are
    not TRUE match nothing and stay unmatched; with equality and IS NOT DISTINCT FROM keys,
    over random small tables with NULLs (some empty), against DuckDB."""
    import random

    rng = random.Random(11)

    def table(n: int, names: tuple[str, ...]) -> pa.Table:
        return pa.table({nm: pa.array([rng.choice([None, 0, 1, 2, 3]) for _ in range(n)],
                                      pa.int64()) for nm in names})

    for _ in range(12):
        t, r = table(rng.randint(0, 12), ("k", "p", "x")), table(rng.randint(0, 12), ("id", "q", "y"))
        con.register("t", t)
        con.register("r", r)
        try:
            for _ in range(6):
                kind = rng.choice(["LEFT", "RIGHT", "FULL", "INNER"])
                eq = rng.choice(["t.k = r.id", "t.k IS NOT DISTINCT FROM r.id",
                                 "t.k = r.id AND t.x = r.y"])
                conds = rng.sample(["t.p = 1", "t.p IS NULL", "r.q > 1", "r.q IS NOT NULL",
                                    "t.x + 1 > 2", "r.y <> 0"], rng.randint(1, 3))
                sql = (f"SELECT t.k, t.p, t.x, r.id, r.q, r.y FROM t {kind} JOIN r "
                       f"ON {eq} AND {' AND '.join(conds)}")
                assert_same_rows(con.sql(sql).rows(), duck_tables(sql, {"t": t, "r": r}),
                                 ordered=False)
        finally:
            con.unregister("t")
            con.unregister("r")
