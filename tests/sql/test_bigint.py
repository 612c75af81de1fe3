"""Integers beyond 2**53 in the planner: exact thresholds for constants, literals that
cannot round or wrap, pruning by exact int64 zone maps, and the NumPy reference's overflow
checks (the issue "integers beyond 2^53 and sums beyond int64")."""

from __future__ import annotations

import random
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest

from bamql.errors import OutOfRangeError, PlanError
from bamql.fused import ir
from bamql.fused.evaluate import evaluate, int_arith
from bamql.fused.show import show
from bamql.intmath import I64_MAX, I64_MIN, first_above, first_at_least, int_interval
from bamql.physical.planning import _int_mask, _int_zones
from bamql.sql.translate import translate
from bamql.storage.format import ColumnMeta

BIG = 1 << 62
COLS = {"trips": {
    "id": ColumnMeta("id", "int", "int64", 0, 1, 512, min=BIG, max=BIG + 8999),
    "f": ColumnMeta("f", "float", "float64", 1, 1, 512),
    "ts": ColumnMeta("ts", "timestamp", "int64", 2, 1, 512),
}}


def _where(cond: str) -> ir.Expr:
    return translate(f"SELECT COUNT(*) FROM trips WHERE {cond}", COLS).predicate


def test_thresholds_match_brute_force():
    rng = random.Random(5)
    near = [BIG, -BIG, 1 << 53, 100000000000159236, I64_MAX, I64_MIN, 0, 7]
    consts = [Fraction(5, 2), Fraction(-5, 2), Fraction(BIG) + Fraction(1, 2), 2.5, -0.5]
    consts += [float(x) for x in near] + [float(x + d) for x in near for d in (-700, 300)]
    consts += [x + d for x in near for d in (-1, 0, 1)]
    for c in consts:
        ge, gt = first_at_least(c), first_above(c)
        as_float = isinstance(c, float)
        centre = int(c) if abs(float(c)) < 2**64 else 0
        for x in [centre + d for d in range(-3000, 3000, 7)] + [ge - 1, ge, gt - 1, gt]:
            fx = float(x) if as_float else x  # a double compares as SQL: BIGINT to DOUBLE
            assert (x >= ge) == (fx >= c) and (x >= gt) == (fx > c), (c, x, ge, gt)
    for _ in range(200):  # doubles anywhere in the int64 range
        c = rng.uniform(-2.0**63, 2.0**63)
        ge = first_at_least(c)
        assert float(ge) >= c and float(ge - 1) < c
    assert int_interval("=", 2.5) == (3, 3)  # no integer equals 2.5
    assert first_at_least(1e300) > I64_MAX and first_above(-1e300) < I64_MIN


@pytest.mark.parametrize("cond, want", [
    # a decimal constant is exact (DuckDB: DECIMAL), never rounded to a double
    ("id < 4611686018427387904.5", "id < 4611686018427387905"),
    ("id = 4611686018427387904.5", "(id >= 4611686018427387905 AND id < 4611686018427387905)"),
    ("id <> 2.5", "(id < 3 OR id >= 3)"),
    ("id BETWEEN 1.5 AND 3.5", "(id >= 2 AND id < 4)"),
    ("-2.5 < id", "id >= -2"),
    # a double compares as SQL compares BIGINT with DOUBLE: every id rounding to 2**62 equals it
    ("id = 4611686018427387904e0", "(id >= 4611686018427387648 AND id < 4611686018427388417)"),
    # beyond int64: always TRUE or always FALSE for a non-NULL id, never a wrapped constant
    ("id < 100000000000000000000", "id <= 9223372036854775807"),
    ("id > 100000000000000000000", "id > 9223372036854775807"),
    ("id > -100000000000000000000", "id >= -9223372036854775808"),
    ("id IN (1, 2.0)", "id IN (1, 2)"),
    ("id = 4.0", "id = 4"),
    ("f < 100000000000000000000", "f < 1e+20"),
])
def test_constants_against_integers_are_exact(cond, want):
    assert show(_where(cond)) == want


def test_in_lists_with_inexact_constants_keep_sql_logic():
    e = _where("id NOT IN (1, 2.5, NULL)")
    assert isinstance(e, ir.Not) and isinstance(e.arg, ir.Or)
    env = {"id": (np.array([1, 2, 3, 4], np.int64), np.array([True, True, True, False]))}
    v, ok = evaluate(e, env, 4)
    assert not ok[1:].any() and ok[0] and not v[0]  # NULL in the list: never TRUE


def test_out_of_range_constants_fail_in_one_line():
    with pytest.raises(PlanError, match="timestamp '300000-01-01' is out of range"):
        _where("ts < TIMESTAMP '300000-01-01'")
    with pytest.raises(PlanError, match="out of range"):
        _where("ts > '294247-01-10 04:00:54.775808'")
    assert _where("ts <= '294247-01-10 04:00:54.775807'").right.value == I64_MAX
    with pytest.raises(PlanError, match="out of the range of BIGINT"):
        _where("id * 100000000000000000000 > 1")


def test_reference_arithmetic_raises_on_overflow_and_is_exact_over_sums():
    a = np.array([BIG, 5, I64_MIN], np.int64)
    with pytest.raises(OutOfRangeError, match="Overflow in multiplication of INT64"):
        int_arith("*", a, np.full(3, 4, np.int64), np.array([True, True, False]))
    # a NULL's sentinel is no value: it does not overflow
    assert int_arith("*", a, np.full(3, 4, np.int64), np.array([False, True, False]))[1] == 20
    with pytest.raises(OutOfRangeError, match="negation"):
        int_arith("-", None, a, np.array([False, False, True]))
    with pytest.raises(OutOfRangeError, match="addition"):
        evaluate(_where("id + id > 0"), {"id": (a, np.ones(3, bool))}, 3)
    sums = np.array([4 * BIG], dtype=object)  # an integer SUM: 128-bit, as DuckDB's HUGEINT
    assert int_arith("*", sums, np.array([4]), np.array([True]))[0] == 16 * BIG


def test_int_zone_maps_prune_exactly():
    lo = np.array([BIG, BIG + 512, I64_MAX, 100000000000159232], np.int64)
    hi = np.array([BIG + 511, BIG + 1023, I64_MIN, 100000000000159239], np.int64)  # page 2: NULLs
    col = ir.Col("id", "int")

    def mask(op, v):
        return _int_mask(ir.Cmp(op, col, ir.Lit(v, "int")), lo, hi).tolist()

    assert mask("<", 100000000000159236) == [False, False, False, True]
    assert mask("<>", BIG) == [True, True, False, True]
    assert mask(">", BIG + 511) == [False, True, False, False]
    # a double compares as the kernels do: x < 2.0**62 + 1024 holds up to 2**62 + 512
    assert mask("<", float(BIG + 600)) == [True, True, False, True]
    assert mask("<", float(BIG)) == [False, False, False, True]
    assert mask("=", 2 ** 70) == [False] * 4
    assert _int_mask(ir.InList(col, (ir.Lit(BIG + 600, "int"), ir.Lit(None, "null"))), lo,
                     hi).tolist() == [False, True, False, False]


def test_stores_without_int_zone_maps_prune_only_where_floats_are_exact():
    def store(zmin, zmax):
        return SimpleNamespace(pages=SimpleNamespace(zmin=np.array(zmin), zmax=np.array(zmax),
                                                     izmin=None, izmax=None))

    ids = slice(0, 2)
    lo, hi = _int_zones(store([1.0, np.inf], [9.0, -np.inf]), None, ids)
    assert lo.tolist() == [1, I64_MAX] and hi.tolist() == [9, I64_MIN]
    assert _int_zones(store([float(BIG), 1.0], [float(BIG), 2.0]), None, ids) is None
