"""A session's one path: every statement is planned (``exec.tree.plan``), optimized and
run; a statement the fused translator takes whole is one leaf, any other a tree."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import bamql
from bamql.errors import PlanError
from bamql.exec.tree import plan
from bamql.plan import nodes as n
from tests.conftest import SAMPLES
from tests.reference import assert_same_rows, duck, duck_tables


@pytest.fixture(scope="module")
def con(sample_store):
    with bamql.connect(sample_store, device="cpu") as c:
        yield c


@pytest.fixture(scope="module")
def sample():
    return pa.concat_tables(pacsv.read_csv(p) for p in SAMPLES)


def test_a_statement_the_kernel_takes_whole_is_one_leaf(con, sample):
    sql = "SELECT payment_type, COUNT(*), AVG(fare_amount) FROM trips WHERE trip_distance > 2 GROUP BY 1"
    node = plan(con, sql)
    assert isinstance(node, n.FusedStatement) and node.sql == sql
    res = con.sql(sql)
    assert res.stats is not None and res.stats.rows_matched > 0  # the kernel's own statistics
    assert_same_rows(res.rows(), duck(sql, sample), ordered=False)
    assert con.explain(sql) == res.plan_text  # EXPLAIN: the kernel's plan, as the run's


def test_any_other_statement_is_a_tree_with_fused_leaves(con, sample):
    sql = ("SELECT payment_type, n, RANK() OVER (ORDER BY n DESC) FROM "
           "(SELECT payment_type, COUNT(*) AS n FROM trips GROUP BY 1) ORDER BY 3, 1")
    node = plan(con, sql)
    assert not isinstance(node, n.FusedStatement)
    assert any(isinstance(x, n.Fused) for x in _walk(node))  # the GROUP BY fused below
    assert_same_rows(con.sql(sql).rows(), duck(sql, sample), ordered=True)
    assert "FusedKernel" in con.explain(sql)


def test_a_repeated_joined_key_is_the_trees_hash_join(sample_store, sample):
    # a registered table's repeated key: the kernel's lookup refuses it, the tree joins
    dim = pa.table({"payment_type": [1, 2, 2], "name": ["card", "cash", "cash again"]})
    sql = ("SELECT d.name, COUNT(*), SUM(t.fare_amount) FROM trips t "
           "JOIN d ON t.payment_type = d.payment_type GROUP BY 1")
    with bamql.connect(sample_store, device="cpu") as c:
        c.register("d", dim)
        assert not isinstance(plan(c, sql), n.FusedStatement)
        assert_same_rows(c.sql(sql).rows(), duck_tables(sql, {"trips": sample, "d": dim}),
                         ordered=False)


def test_a_leaf_refused_at_run_time_is_planned_again_as_a_tree(sample_store, sample,
                                                                monkeypatch):
    sql = "SELECT payment_type, COUNT(*) FROM trips GROUP BY 1"
    with bamql.connect(sample_store, device="cpu") as c:
        run, calls = c.run, []

        def refuse_once(q):
            calls.append(q)
            if len(calls) == 1:
                raise PlanError("a construct is not supported by the kernel here")
            return run(q)

        monkeypatch.setattr(c, "run", refuse_once)
        assert_same_rows(c.sql(sql).rows(), duck(sql, sample), ordered=False)
        assert len(calls) == 2  # the whole statement, then the tree's fused leaf


def test_a_name_error_is_the_statements_own(con):
    with pytest.raises(PlanError, match="nosuch"):
        plan(con, "SELECT nosuch FROM trips")
    with pytest.raises(PlanError, match="nosuch"):
        con.sql("SELECT payment_type, RANK() OVER (ORDER BY nosuch) FROM trips")


def _walk(node: n.Node):
    yield node
    for c in node.children:
        yield from _walk(c)


V = pa.table({"g": ["a", "a", "a", "b", "b"], "x": [1, 2, 3, 4, 5], "y": [30, 10, 20, 5, 6]})
U = pa.table({"g": [1, 1, 1], "x": pa.array([2**63 - 1, 2**63 - 2, 2**63 - 3], pa.int64())})


@pytest.mark.parametrize("sql", [
    "SELECT DISTINCT ON (g) g, -y AS X FROM v ORDER BY g, x",  # an alias of another case
    "SELECT DISTINCT ON (X) g, y % 2 AS x FROM v ORDER BY x, g",
    "SELECT DISTINCT ON (2) g, x FROM v ORDER BY 2, 1",  # a position as the key
    "SELECT * EXCLUDE (x) FROM v ORDER BY y",
    "SELECT * REPLACE (x * 10 AS x) FROM v ORDER BY y",
    "SELECT DISTINCT ON (g) * EXCLUDE (x) FROM v ORDER BY g, y",
    "SELECT v.* EXCLUDE (X, g) FROM v ORDER BY 1",
    "SELECT g, STDDEV_POP(DISTINCT x) FROM u GROUP BY g",  # int64 past 2**53: as doubles
    "SELECT g, STDDEV_POP(x), VAR_SAMP(x) FROM (SELECT * FROM u) s GROUP BY g",
    "SELECT DISTINCT ON (g) *, -x AS z FROM v ORDER BY g, 2",  # positions past a *
    "SELECT * RENAME (x AS z) FROM v ORDER BY y",
    "SELECT a, SUM(x) FROM v AS t(a) GROUP BY a ORDER BY a",  # t(a): the first column
    "SELECT x FROM v AS t(x) ORDER BY 1",  # a renamed column hides the one of its name
    "SELECT COUNT(*) FROM v WHERE x OR NOT y LIMIT 2 * 1",  # numbers as conditions
    "SELECT g FROM v WHERE g LIKE g || '%' ORDER BY 1",  # LIKE a column
    # session 51's review: a CTE's own columns under *, a correlated IN inside a CTE,
    # numbers under AND/OR/NOT in HAVING, LIMIT cast as DuckDB casts it
    "WITH c AS (SELECT x FROM v) SELECT * FROM c ORDER BY 1",
    "WITH c AS (SELECT x, y + 1 AS z FROM v WHERE x > 1) SELECT * FROM c ORDER BY 1",
    "WITH c AS (SELECT * FROM v WHERE x > 2) SELECT * FROM c ORDER BY x",
    "WITH c AS (SELECT x FROM v WHERE y IN (SELECT y FROM v w WHERE w.g = v.g AND w.x > 1)) "
    "SELECT COUNT(*) FROM c",
    "SELECT g FROM v GROUP BY g HAVING SUM(x) - 6 AND COUNT(*) > 0 ORDER BY 1",
    "SELECT g FROM v GROUP BY g HAVING NOT (SUM(x) - 6) ORDER BY 1",
    "SELECT x FROM v ORDER BY x LIMIT 5 / 2",  # a DOUBLE: half to even
    "SELECT x FROM v ORDER BY x LIMIT 2.5",  # a DECIMAL: half away from zero
    "SELECT x FROM v ORDER BY x LIMIT 1 / 2 OFFSET '1'",
    "SELECT x FROM v ORDER BY x LIMIT NULL OFFSET TRUE",
])
def test_review_findings_answer_as_duckdb(sql):
    with bamql.connect(":memory:") as c:
        c.register("v", V)
        c.register("u", U)
        assert_same_rows(c.sql(sql).rows(), duck_tables(sql, {"v": V, "u": U}), ordered=True)


@pytest.mark.parametrize("sql, words", [
    ("SELECT DISTINCT ON (3) g, x FROM v", "DISTINCT ON 3: the select list has 2 items"),
    ("SELECT DISTINCT ON (g) g, x FROM v ORDER BY g, -1", "ORDER BY -1"),
    ("SELECT DISTINCT ON (g) g, x FROM v ORDER BY g, 1.0", "a position is a whole number"),
    ("SELECT g, x FROM (SELECT * FROM v) s ORDER BY 1.0", "a position is a whole number"),
    ("SELECT DISTINCT ON (g) *, -x AS z FROM v ORDER BY g, 9", "ORDER BY 9: the select list has"),
    ("SELECT * FROM v AS t(a, b, c, d, e)", "has 3 columns available but 5 columns specified"),
    ("SELECT COUNT(*) FROM v LIMIT 1 - 2", "LIMIT takes a non-negative integer"),
    ("SELECT COUNT(*) FROM v WHERE g", "expected a condition, got a string"),
    ("WITH RECURSIVE r AS (SELECT n + 1 AS n FROM r UNION ALL SELECT 1) SELECT * FROM r",
     "a CTE that reads itself"),
    ("SELECT * EXCLUDE (nope) FROM v", "no column 'nope'"),
    ("SELECT SUM(DISTINCT g) FROM v", "needs numbers, got string"),
    ("SELECT DISTINCT ON (nope) g FROM v", "unknown column 'nope'"),
    ("SELECT x FROM v GROUP BY x HAVING MAX(g) AND COUNT(*) > 0", "take conditions, not a string"),
    ("SELECT x FROM v LIMIT 9223372036854775808", "out of range for BIGINT"),
])
def test_review_findings_are_one_line_errors(sql, words):
    with bamql.connect(":memory:") as c:
        c.register("v", V)
        with pytest.raises(PlanError, match=words):
            c.sql(sql)


def test_a_registered_table_a_store_cannot_hold_is_read_by_the_tree():
    """The smallest BIGINT is a store's NULL mark: a registered table holding it is read as
    it is by the plan tree, as DuckDB reads it."""
    t = pa.table({"x": pa.array([-2**63, 1, None, 2**63 - 1, -5], pa.int64()),
                  "g": [1, 1, 2, 2, 1], "s": ["a", None, "b", "c", "a"]})
    with bamql.connect(":memory:") as c:
        c.register("v", t)
        for sql in ("SELECT g, COUNT(*), MIN(x), MAX(x), COUNT(x) FROM v GROUP BY g ORDER BY g",
                    "SELECT s, x FROM v WHERE x = -9223372036854775808 OR x IS NULL ORDER BY s",
                    "SELECT SUM(x), COUNT(*) FROM v WHERE x > 0"):
            assert_same_rows(c.sql(sql).rows(), duck_tables(sql, {"v": t}), ordered="ORDER BY" in sql)


T4 = pa.table({"a": pa.array([1, 2], pa.int64()), "b": [1.5, 2.5], "c": ["x", "y"],
               "d": pa.array([10, 20], pa.int64())})
L = pa.table({"s": ["abc", "xyz", None, "a.c"], "p": ["a%", "a%", "a%", "a_c"]})
M = pa.table({"v": pa.array([-2**63, -5, 7, -7, 6], pa.int64())})


@pytest.mark.parametrize("sql", [
    "SELECT s, s NOT LIKE p, s NOT ILIKE p FROM l",  # a review's findings, each a wrong answer
    "SELECT s FROM l WHERE s NOT LIKE 'a' || '%'",
    "SELECT * FROM t s(c)",  # a renamed column's name met again is c_1
    "SELECT * FROM t s(d, c)",
    "SELECT * FROM t s(x, x)",
    "SELECT * FROM (SELECT a, d FROM t) s(d)",
    "WITH c(d) AS (SELECT a, d FROM t) SELECT * FROM c",
    "SELECT SUM(z) FROM t s(z, b2, c2, d2) WHERE d2 > 15",  # names by position, none pruned
    "SELECT a FROM t s(a, a2)",
    "SELECT v // 2, v // 3, v // -2 FROM m",  # the smallest BIGINT, truncated toward zero
    "SELECT date_trunc('decade', TIMESTAMP '2019-05-01 10:00'), s ILIKE upper(p) FROM l",
])
def test_review_findings_of_session_50_answer_as_duckdb(sql):
    with bamql.connect(":memory:") as c:
        for name, tbl in (("t", T4), ("l", L), ("m", M)):
            c.register(name, tbl)
        r = c.sql(sql)
        assert_same_rows(r.rows(), duck_tables(sql, {"t": T4, "l": L, "m": M}), ordered=False)
        if sql.startswith("SELECT * FROM t s(c)"):
            assert r.table.column_names == ["c", "b", "c_1", "d"]


@pytest.mark.parametrize("sql, words", [
    ("SELECT a FROM t LIMIT 10 %", "a share of the rows"),
    ("SELECT v // -1 FROM m", "Overflow in division"),
    ("SELECT * REPLACE (a * 2 AS a) RENAME (a AS aa) FROM t", "both replaced and renamed"),
])
def test_review_findings_of_session_50_are_one_line_errors(sql, words):
    with bamql.connect(":memory:") as c:
        c.register("t", T4)
        c.register("m", M)
        with pytest.raises(bamql.BamqlError, match=words):
            c.sql(sql)


RECURSIVE = [
    "WITH RECURSIVE t AS (SELECT 1 AS x UNION ALL SELECT x + 1 FROM t WHERE x < 5) "
    "SELECT SUM(x), COUNT(*) FROM t",
    "WITH RECURSIVE t(n, f) AS (SELECT 1, 1::BIGINT UNION ALL SELECT n + 1, f * (n + 1) FROM t "
    "WHERE n < 12) SELECT n, f FROM t ORDER BY n",
    # UNION: a round adds only rows not met before, so a cycle ends
    "WITH RECURSIVE t AS (SELECT 1 AS x UNION SELECT x % 4 + 1 FROM t) SELECT x FROM t ORDER BY x",
    "WITH RECURSIVE d(day) AS (SELECT DATE '2019-01-30' UNION ALL SELECT day + 1 FROM d "
    "WHERE day < DATE '2019-02-02') SELECT day FROM d ORDER BY day",
    "WITH RECURSIVE h(h) AS (SELECT 0 UNION ALL SELECT h + 1 FROM h WHERE h < 23) "
    "SELECT h.h, COUNT(t.pickup_datetime) FROM h LEFT JOIN trips t "
    "ON EXTRACT(hour FROM t.pickup_datetime) = h.h GROUP BY 1 ORDER BY 1",
]


@pytest.mark.parametrize("sql", RECURSIVE)
def test_recursive_ctes_answer_as_duckdb(con, sample, sql):
    assert_same_rows(con.sql(sql).rows(), duck(sql, sample), ordered=True)
    assert "RecursiveCTE" in con.explain(sql) and "WorkTable" in con.explain(sql)


def test_a_recursion_that_never_ends_is_one_line(con, monkeypatch):
    from bamql.plan import operators

    monkeypatch.setattr(operators, "MAX_ROUNDS", 50)
    with pytest.raises(PlanError, match=r"^WITH RECURSIVE t ran 50 rounds without ending"):
        con.sql("WITH RECURSIVE t AS (SELECT 1 AS x UNION ALL SELECT x + 1 FROM t) SELECT * FROM t")
    with pytest.raises(PlanError, match="parts return 1 and 2 columns"):
        con.sql("WITH RECURSIVE t AS (SELECT 1 AS x UNION ALL SELECT x, x FROM t) SELECT * FROM t")
