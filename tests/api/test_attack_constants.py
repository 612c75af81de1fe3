"""Hostile tests of constants as kernel arguments, OR/AND merging into IN lists, lifted IN
lists and wide filters: each test here failed before its fix (its comment says what was
wrong).

All on the CPU engine over one 16-row table, compared with DuckDB (``tests.reference``).
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.errors import BamqlError
from bamql.storage.ingest import ingest
from tests.reference import assert_same_rows, duck

#: 20 always-FALSE terms: ORed to a predicate they push it past WIDE_FILTER_NODES (48), so
#: the CPU engine evaluates it with the NumPy interpreter (fused.evaluate)
PAD = " OR ".join(f"id < {-1000 - i}" for i in range(20))
#: 70 integers: an IN list that sql.lists lifts out of the SQL text (>= 64 values)
LONG = ", ".join(str(i) for i in range(100, 170))


def _table() -> pa.Table:
    return pa.table({
        "id": pa.array(np.arange(16), pa.int64()),
        "k": pa.array([0, 1, 2, 3, None, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], pa.int64()),
        "f32": pa.array(np.array([0.1, 0.2, 0.3, 0.7, 1.1, 16777217, -0.0, np.nan, np.inf,
                                  -np.inf, 0.5, 1.5, 2.5, 0.3, 0.1, 3.3], np.float32)),
        "fx": pa.array([0.1, 0.2, np.nan, np.inf, -np.inf, -0.0, 0.0, 1e20, 2.0**53, None,
                        1.5, 2.5, np.nan, 3.0, 4.0, 5.0], pa.float64()),
        "dec": pa.array([Decimal(x) for x in ("0.12", "-0.12", "9999999999.99", "0", "0.01",
                                              "0.10", "0.30", "1.00", "0", "-9999999999.99",
                                              "2.50", "0.11", "0.13", "1234567890.12",
                                              "1234567890.13", "5")], pa.decimal128(12, 2)),
    })


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    d = tmp_path_factory.mktemp("attack_constants")
    t = _table()
    pq.write_table(t, d / "t.parquet")
    ingest([d / "t.parquet"], d / "db" / "trips", page_size=512)
    return d / "db", t


def _same(db, sql):
    d, t = db
    with bamql.connect(d, device="cpu") as con:
        got = con.sql(sql).rows()
    assert_same_rows(got, duck(sql, t), ordered=False)


def test_wide_filter_lifted_float_in_list_with_integer_beyond_int64(db):
    # the CPU wide path (fused.evaluate InList, np.isin over an object array) compares
    # fx = 1e20 with the integer 100000000000000000001 exactly; DuckDB (and the compiled and
    # GPU paths, codegen.in_values) compare as doubles: 1 row, bamql says 0. Only the first
    # value of a lifted list is coerced (translate.In), so the Lit stays a huge int.
    _same(db, f"SELECT COUNT(*) FROM trips WHERE fx IN ({LONG}, 100000000000000000001) OR {PAD}")


def test_session_plan_cache_does_not_confuse_zero_and_negative_zero(db):
    # Session._plans is keyed by the IR, whose Lit(0.0) == Lit(-0.0) (dataclass equality,
    # same hash): the second query reuses the first one's plan and answers 14, not 5
    d, t = db
    with bamql.connect(d, device="cpu") as con:
        con.sql("SELECT COUNT(*) FROM trips WHERE fx / 0.0e0 > 0").rows()
        sql = "SELECT COUNT(*) FROM trips WHERE fx / -0.0e0 > 0"
        assert_same_rows(con.sql(sql).rows(), duck(sql, t), ordered=False)


def test_or_merge_keeps_apart_expressions_over_zero_and_negative_zero(db):
    # ir.any_of keys its IN lists by the IR of the left side: fx / 0.0 and fx / -0.0e0 are
    # "equal" and merged into one IN list over fx / 0.0, losing fx = -inf (-inf / -0.0 =
    # +inf): DuckDB 11, bamql 10
    _same(db, f"SELECT COUNT(*) FROM trips WHERE (fx / 0.0 = 1e999 OR fx / -0.0e0 = 1e999) OR {PAD}")


def test_decimal_negative_zero_literal_has_no_sign(db):
    # -0.0 is a DECIMAL in DuckDB (no negative zero): fx / -0.0 is fx / 0; bamql folds it into
    # the double -0.0 and flips the sign of every quotient: DuckDB 14, bamql 5 (pre-existing)
    _same(db, "SELECT COUNT(*) FROM trips WHERE fx / -0.0 > 0")


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM trips WHERE f32 = 0.1",  # DuckDB 2, bamql 0
    "SELECT COUNT(*) FROM trips WHERE f32 IN (0.1, 0.2)",  # DuckDB 3, bamql 0
    "SELECT COUNT(*) FROM trips WHERE f32 = 16777217",  # DuckDB 1, bamql 0
])
def test_float32_column_against_constants_compares_as_float(db, sql):
    # DuckDB compares a FLOAT column with a DECIMAL/INTEGER constant as FLOAT (the constant
    # rounded to float32); bamql widens the column to double and compares with the double
    # constant, so 0.1f never equals 0.1 (pre-existing; constants as arguments kept it)
    _same(db, sql)


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM trips WHERE fx < 1" + "0" * 400,
    "SELECT COUNT(*) FROM trips WHERE fx IN (1, 1" + "0" * 400 + ")",
    f"SELECT COUNT(*) FROM trips WHERE fx IN ({LONG}, 1" + "0" * 400 + ")",
])
def test_integer_constant_beyond_double_against_float_column_is_a_bamql_error(db, sql):
    # translate.coerce_literal's float(10**400) (for a lifted list, where only the first value
    # is coerced: physical._page_mask's float(x.value), then codegen.in_values's) raises
    # Python's OverflowError 'int too large to convert to float', not a one-line bamql error
    # (DuckDB refuses it too: "Could not convert bignum ... to DOUBLE")
    d, _ = db
    with bamql.connect(d, device="cpu") as con, pytest.raises(BamqlError):
        con.sql(sql).rows()
