"""Random tables and random queries (SQLancer-style): hypothesis draws a table (row count,
NULL shares, value ranges, NaN/inf, timestamps around 1970, unicode strings), a store shape
and queries over it; bamql must answer as DuckDB does on the same rows. On the CPU engine
in-process, and on the GPU engine in numba's CUDA simulator in a subprocess."""

from __future__ import annotations

import operator
import os
import re
import subprocess
import sys
import tempfile
from decimal import localcontext
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bamql
from bamql.errors import OutOfRangeError
from bamql.storage.ingest import ingest
from tests.conftest import examples
from tests.reference import assert_same_rows, duck_tables, normalize
from tests.sql.fuzz import big_ints

REPO = Path(__file__).resolve().parents[2]
WORDS = ["", "a", "b", "Z", "é", "日本", "🚕"]
NUMERIC = ["i", "g", "x", "y", "z"]


#: int64 limits: the least int64 is the store's NULL sentinel (a column holding it is refused
#: at ingest), so the widest generated span stops one short of it
I64_MAX = 2**63 - 1
#: hostile floats for z: signed zero, subnormals, the largest doubles, NaN, infinities,
#: whole numbers beyond 2**53 and at 2**63
FLOAT_SPECIALS = [np.nan, np.inf, -np.inf, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308,
                  1.7976931348623157e308, -1.7976931348623157e308, 2.0**53 + 2, 2.0**63, -2.0**63]
#: timestamp spans in microseconds: around 1970 (1875..2065) or the whole of years 1..9999
TIME_SPANS = [(-3 * 10**15, 3 * 10**15), (-62135596800 * 10**6, 253402300799 * 10**6)]


@st.composite
def tables(draw) -> pa.Table:
    """A random table ``r``: i (int, a wide range up to the int64 limits, its ends often
    present), g (int 0..5, a key), x (2-decimal floats), y (whole floats), z (floats with
    NaN, +-inf, -0.0, subnormals and huge values), t (timestamps around 1970 or over years
    1..9999), s (strings, unicode and empty). NULLs are spread or in one run (all-NULL pages);
    a table may have no rows."""
    n = draw(st.integers(1, 400)) if draw(st.sampled_from([True] * 7 + [False])) else 0
    seed = draw(st.integers(0, 2**32 - 1))
    null = draw(st.sampled_from([0.0, 0.0, 0.1, 0.5, 1.0]))
    run = draw(st.booleans())  # NULLs in one contiguous run rather than spread
    span = draw(st.sampled_from([10, 1000, 2**15, 10**6, 2**31, 2**40, 2**60, I64_MAX]))
    ends = draw(st.booleans())  # the span's ends present (-span and span - 1: int16/int32 limits)
    specials = draw(st.booleans())
    times = draw(st.sampled_from(TIME_SPANS))
    rng = np.random.default_rng(seed)

    def mask() -> np.ndarray:
        if run:
            m = np.zeros(n, bool)
            start = int(rng.integers(0, n + 1))
            m[start:start + int(null * n)] = True
            return m
        return rng.random(n) < null

    i = rng.integers(-span, span, n)
    if ends and n:
        i[rng.random(n) < 0.2] = -span
        i[rng.random(n) < 0.2] = span if span == I64_MAX else span - 1
    z = rng.normal(0, 100, n)
    if specials:
        for v in rng.choice(FLOAT_SPECIALS, 2):
            z[rng.random(n) < 0.15] = v
    t = rng.integers(*times, n)
    return pa.table({
        "i": pa.array(i, pa.int64(), mask=mask()),
        "g": pa.array(rng.integers(0, 6, n), pa.int64(), mask=mask()),
        "x": pa.array(np.round(rng.uniform(-500, 500, n), 2), pa.float64(), mask=mask()),
        "y": pa.array(np.round(rng.uniform(-1e4, 1e4, n)), pa.float64(), mask=mask()),
        "z": pa.array(z, pa.float64(), mask=mask()),
        "t": pa.array(t, pa.timestamp("us"), mask=mask()),
        "s": pa.array([WORDS[j] for j in rng.integers(0, len(WORDS), n)], pa.string(), mask=mask()),
    })


#: constants of comparisons: decimals, whole numbers, the int64 limits, -0.0, the extreme
#: doubles, NaN and NULL
LITERALS = ["0", "1", "-1", "3", "2.5", "-100", "250.75", "1000", "-0.0", "9223372036854775807",
            "-9223372036854775807", "1e308", "5e-324", "'NaN'::DOUBLE", "NULL"]


@st.composite
def leaf(draw) -> str:
    c = draw(st.sampled_from(NUMERIC))
    kind = draw(st.sampled_from(["cmp", "cols", "between", "in", "null", "str", "time", "arith"]))
    lit = draw(st.sampled_from(LITERALS))
    if kind == "cmp":
        return f"{c} {draw(st.sampled_from(['=', '<>', '<', '<=', '>', '>=']))} {lit}"
    if kind == "cols":  # an integer with a float, NaN and -0.0 included
        return f"{c} {draw(st.sampled_from(['=', '<>', '<', '>=']))} {draw(st.sampled_from(NUMERIC))}"
    if kind == "between":  # the bounds in either order (reversed: an empty range)
        return f"{c} {draw(st.sampled_from(['', 'NOT ']))}BETWEEN {lit} AND {draw(st.sampled_from(LITERALS))}"
    if kind == "in":  # integer constants: DuckDB would cast a wide BIGINT to a DECIMAL
        small = lit[0] in "-0123456789" and abs(float(lit)) < 1e9  # not NaN, NULL nor 1e308
        k = lit if lit.lstrip("-").isdigit() else int(float(lit)) if small else 7
        null = draw(st.sampled_from(["", ", NULL"]))
        return f"{c} {draw(st.sampled_from(['', 'NOT ']))}IN (0, 1, {k}{null})"
    if kind == "null":
        return f"{draw(st.sampled_from([*NUMERIC, 't', 's']))} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if kind == "str":
        return f"s {draw(st.sampled_from(['=', '<>', '<', '>=']))} '{draw(st.sampled_from(WORDS + ['m']))}'"
    if kind == "time":
        year = draw(st.sampled_from([1, 1900, 1969, 1970, 2000, 2050, 9999]))
        op = draw(st.sampled_from(["<", ">="]))
        if draw(st.booleans()):
            return f"EXTRACT({draw(st.sampled_from(['HOUR', 'MINUTE', 'DOW']))} FROM t) {op} 3"
        return f"t {op} TIMESTAMP '{year:04d}-06-15 12:00:00'"
    # an integer sum, difference or product may overflow BIGINT: see ``check_one``
    op = draw(st.sampled_from(["+", "-", "*"]))
    return f"{c} {op} {draw(st.sampled_from(NUMERIC))} > {lit}"


def predicates(depth: int = 2):
    if depth == 0:
        return leaf()
    sub = predicates(depth - 1)
    return st.one_of(leaf(), st.tuples(sub, sub).map(lambda p: f"({p[0]} AND {p[1]})"),
                     st.tuples(sub, sub).map(lambda p: f"({p[0]} OR {p[1]})"),
                     sub.map(lambda p: f"NOT ({p})"))


@st.composite
def queries(draw) -> str:
    c, c2 = draw(st.sampled_from(NUMERIC)), draw(st.sampled_from(NUMERIC))
    aggs = draw(st.lists(st.sampled_from([
        "COUNT(*)", f"COUNT({c})", f"SUM({c})", f"AVG({c})", f"MIN({c})", f"MAX({c})",
        f"SUM({c} + {c2})", f"MAX({c} - {c2})", f"AVG({c} / {c2})", f"MIN({c} * {c2})", "MIN(t)",
        "MAX(s)", "COUNT(s)", "SUM(i * g)", "MAX(i + i)",  # integer overflow: see ``check_one``
    ]), min_size=1, max_size=3))
    key = draw(st.sampled_from([None, None, "g", "s", "EXTRACT(HOUR FROM t)", "EXTRACT(DOW FROM t)"]))
    where = draw(st.one_of(st.none(), predicates()))
    sql = f"SELECT {', '.join(([key] if key else []) + aggs)} FROM r"
    if where:
        sql += f" WHERE {where}"
    if key:
        sql += " GROUP BY 1 ORDER BY 1"
    return sql


def int_overflows(sql: str, table: pa.Table) -> bool:
    """Whether an operation ``a op b`` of the integer columns i and g in ``sql`` leaves the
    int64 range on some row of ``table`` (the generator writes them so, spaces around op)."""
    ops = {"+": operator.add, "-": operator.sub, "*": operator.mul}
    for a, op, b in re.findall(r"\b([ig]) ([-+*]) ([ig])\b", sql):
        for u, v in zip(table[a].to_pylist(), table[b].to_pylist(), strict=True):
            if u is not None and v is not None and not -(2**63) <= ops[op](u, v) <= I64_MAX:
                return True
    return False


def exact_rows(sql: str, table: pa.Table) -> list[tuple]:
    """DuckDB's answer with the integer columns as HUGEINT: what ``sql`` means with no int64
    overflow anywhere."""
    con = duckdb.connect()
    con.execute("SET error_on_division_by_zero=false")
    con.register("r_int64", normalize(table))
    con.execute("CREATE VIEW r AS SELECT * REPLACE (i::HUGEINT AS i, g::HUGEINT AS g) FROM r_int64")
    return con.sql(sql).fetchall()


def check_one(con, table: pa.Table, sql: str) -> None:
    """Compare bamql's answer to ``sql`` with DuckDB's. Where an integer operation overflows
    BIGINT on some row, the two may differ in whether they raise, never in an answer: bamql
    raises wherever it evaluates an overflowing operation on a row that counts, DuckDB where
    it evaluates one, and it skips some (an AND it short-circuits, a ``SUM(i + 1)`` it
    rewrites as ``SUM(i) + COUNT(i)``). So a raise on either side needs an overflowing row,
    and an answer from bamql where DuckDB raised must be the exact (HUGEINT) answer."""
    try:
        ref = duck_tables(sql, {"r": table})
    except duckdb.OutOfRangeException:
        ref = None
    try:
        ours = con.sql(sql).rows()
    except OutOfRangeError:
        assert int_overflows(sql, table), f"bamql reports an overflow that no row has: {sql}"
        return
    if ref is None:
        assert int_overflows(sql, table), f"DuckDB reports an overflow that no row has: {sql}"
        ref = exact_rows(sql, table)
    assert_same_rows(ours, ref, ordered="ORDER BY" in sql)


def check(table: pa.Table, sqls: list[str], page_size: int, floats: str, device: str = "cpu",
          backend: str | None = None, cache_slots: int | None = None) -> None:
    """Ingest ``table`` as ``r`` and compare every query's answer with DuckDB's."""
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "r.parquet"
        pq.write_table(table, src)
        ingest([src], Path(d) / "data" / "r", page_size=page_size, floats=floats)
        kw = {} if device == "cpu" else {
            "backend": backend, "cache": None if cache_slots is None else str(cache_slots * page_size)}
        with bamql.connect(Path(d) / "data", device=device, **kw) as con:
            for sql in sqls:
                check_one(con, table, sql)


@settings(deadline=None, suppress_health_check=list(HealthCheck))
@given(table=tables(), sqls=st.lists(queries(), min_size=1, max_size=2),
       page_size=st.sampled_from([512, 4096]), floats=st.sampled_from(["auto", "plain"]))
def test_random_tables_and_queries_on_the_cpu(table, sqls, page_size, floats):
    check(table, sqls, page_size, floats)


def test_integer_overflow_is_an_error_or_the_exact_answer():
    """The hostile integers the generator draws, fixed: a product that overflows (an error
    on both sides), a sum whose overflowing row is filtered out (an answer on both), and one
    in an AND that DuckDB may short-circuit (``check_one``'s rule)."""
    table = pa.table({"i": pa.array([I64_MAX, 1, -I64_MAX], pa.int64()),
                      "g": pa.array([2, 0, None], pa.int64()), "x": pa.array([-0.0, 5e-324, np.nan])})
    assert int_overflows("SELECT SUM(i * g) FROM r", table)
    assert not int_overflows("SELECT SUM(i * x) FROM r", table)
    check(table, ["SELECT SUM(i * g) FROM r", "SELECT MAX(i + i) FROM r WHERE g = 0",
                  "SELECT COUNT(*) FROM r WHERE (g = 0 AND i + i > 0)",
                  "SELECT SUM(i), MIN(i / x), MAX(i * x) FROM r WHERE i BETWEEN 9223372036854775807 AND 0"],
          512, "auto")


def simulator_examples(n: int) -> None:
    """Run ``n`` random examples on the GPU engine (call in a process with the simulator);
    an example that hangs (a kernel that never ends) exits the process with its traceback."""
    import faulthandler

    @settings(max_examples=n, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(table=tables(), sql=queries(), backend=st.sampled_from(["host", "gpu", "file"]),
           cache_slots=st.sampled_from([2, 8, None]))
    def run(table, sql, backend, cache_slots):
        print(f"{backend} {cache_slots} slots, {table.num_rows} rows: {sql}", flush=True)
        faulthandler.dump_traceback_later(180, exit=True)
        try:
            check(table, [sql], 512, "auto", "gpu", backend, cache_slots)
        finally:
            faulthandler.cancel_dump_traceback_later()

    run()


@pytest.mark.slow  # in CI's slow run
def test_random_tables_and_queries_in_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONWARNINGS="ignore")
    code = "from tests.sql.test_random import simulator_examples; simulator_examples(15); print('ok')"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=900, cwd=REPO)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout[-3000:] + r.stderr[-5000:]


# -- DECIMALs of every precision ----------------------------------------------------------
#: the one-line refusals a DECIMAL may meet, and why each is no wrong answer: a double where
#: DuckDB keeps a DECIMAL exact, for a value of more than 15 digits, is refused; exact
#: arithmetic that leaves int64 or 38 digits is an overflow error (DuckDB computes up to 38
#: digits); a result type Arrow cannot hold is refused ("more than 38 digits"); a constant a
#: double cannot hold beside a DECIMAL computed as a double is refused
DECIMAL_REFUSALS = ("more than 18 digits", "15 significant digits", "beyond bigint",
                    "overflow", "does not fit decimal(38)", "more than 38 digits",
                    "more significant digits than a double holds")


@st.composite
def decimal_tables(draw) -> pa.Table:
    """A random table ``r``: d a DECIMAL(p, s) of any precision 1..38 whose values have up to
    all p digits (beyond 15 digits a double rounds them, beyond 18 an int64 does not hold
    them), e a narrow DECIMAL(9, 2), g a key 0..3 and x a double; NULLs spread."""
    from decimal import Decimal

    n = draw(st.integers(0, 120))
    p = draw(st.integers(1, 38))
    s = draw(st.integers(0, p))
    digits = draw(st.sampled_from([min(p, 4), min(p, 15), min(p, 17), min(p, 18), p]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    null = draw(st.sampled_from([0.0, 0.2]))
    d = [Decimal(f"{u}E-{s}") for u in big_ints(rng, n, digits)]  # exact: scaleb rounds
    e = [Decimal(int(u)).scaleb(-2) for u in rng.integers(-10**6, 10**6, n)]
    return pa.table({
        "d": pa.array(d, pa.decimal128(p, s), mask=rng.random(n) < null),
        "e": pa.array(e, pa.decimal128(9, 2), mask=rng.random(n) < null),
        "g": pa.array(rng.integers(0, 4, n), pa.int64()),
        "x": pa.array(np.round(rng.uniform(-100, 100, n), 3), pa.float64()),
    })


@st.composite
def decimal_literals(draw, table: pa.Table) -> str:
    """A constant to compare d with: one of its values, one a last digit beside it (of more
    digits than a double holds), a decimal of up to 38 digits, an integer or a DOUBLE."""
    vals = [v for v in table["d"].to_pylist() if v is not None]
    kind = draw(st.sampled_from(["value", "beside", "digits", "int", "double"]))
    if kind in ("value", "beside") and vals:
        v = draw(st.sampled_from(vals))
        if kind == "beside":
            with localcontext(prec=80):  # Decimal's arithmetic rounds to 28 digits
                step = draw(st.sampled_from([1, -1])) * v.__class__(1).scaleb(
                    v.as_tuple().exponent - draw(st.integers(0, 6)))
                v = v + step
        return str(v) if "E" not in str(v) else format(v, "f")
    if kind == "int":
        return str(draw(st.sampled_from([0, 1, -1, 100000000000000, 10**17, -(10**18)])))
    if kind == "double":
        return draw(st.sampled_from(["1.5e0", "-2e14", "1e17"]))
    whole = draw(st.integers(0, 20))
    frac = draw(st.integers(0, 38 - whole))
    text = "".join(draw(st.sampled_from("0123456789")) for _ in range(whole)) or "0"
    if frac:
        text += "." + "".join(draw(st.sampled_from("0123456789")) for _ in range(frac))
    return ("-" if draw(st.booleans()) else "") + text


@st.composite
def decimal_queries(draw, table: pa.Table) -> str:
    lit, lit2 = draw(decimal_literals(table)), draw(decimal_literals(table))
    op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
    cond = draw(st.sampled_from([
        f"d {op} {lit}", f"{lit} {op} d", f"d BETWEEN {lit} AND {lit2}",
        f"d IN ({lit}, {lit2}, NULL)", f"d NOT IN ({lit}, {lit2})", f"d + e {op} {lit}",
        f"d * 2 {op} {lit}", f"d - 1.5 {op} d", f"ABS(d) {op} {lit}", f"-d {op} {lit}",
        f"d {op} e", f"d {op} x", "d IS NULL",
    ]))
    return draw(st.sampled_from([
        f"SELECT COUNT(*) FROM r WHERE {cond}",
        f"SELECT SUM(d), MIN(d), MAX(d), COUNT(d) FROM r WHERE {cond}",
        "SELECT g, SUM(d), MAX(d), MIN(e), AVG(e) FROM r GROUP BY 1 ORDER BY 1",
        "SELECT d, COUNT(*) FROM r GROUP BY d ORDER BY d",
        f"SELECT d, e FROM r WHERE {cond} ORDER BY d, e",
        "SELECT SUM(d + e), MAX(d * 3), MIN(d - e) FROM r",
        f"SELECT g, COUNT(*) FROM r GROUP BY g HAVING SUM(d) {op} {lit} ORDER BY g",
        "SELECT AVG(d), SUM(d) / COUNT(*) FROM r",
        f"SELECT CAST(d AS DOUBLE) FROM r WHERE {cond} ORDER BY 1",
    ]))


def _fits_int64(table: pa.Table) -> bool:
    t = table["d"].type
    with localcontext(prec=80):
        return all(v is None or abs(int(v.scaleb(t.scale))) < 2**63 - 1
                   for v in table["d"].to_pylist())


def check_decimals(table: pa.Table, sqls: list[str], in_place: bool) -> None:
    """``sqls`` over ``table`` as ``r`` (ingested, or its Parquet file read in place): the
    answer DuckDB gives, or one of ``DECIMAL_REFUSALS`` in one line; never another answer."""
    from bamql.errors import BamqlError

    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "r.parquet"
        pq.write_table(table, src)
        try:
            if not in_place:
                ingest([src], Path(d) / "data" / "r", page_size=512)
        except BamqlError as e:  # only a value that no int64 holds is refused
            assert not _fits_int64(table) and "more than 18 digits" in str(e), str(e)
            return
        with bamql.connect(Path(d) / "data" if not in_place else ":memory:") as con:
            for sql in sqls:
                run = sql.replace("FROM r", f"FROM '{src}' AS r") if in_place else sql
                try:
                    ref = duck_tables(sql, {"r": table})
                except duckdb.OutOfRangeException:
                    ref = None
                except duckdb.ConversionException:  # DuckDB's own refusal: a constant beyond
                    continue                        # DECIMAL(38, s), which bamql compares
                try:
                    ours = con.sql(run).rows()
                except BamqlError as e:
                    msg = str(e)
                    assert "\n" not in msg and any(w in msg.lower() for w in DECIMAL_REFUSALS), \
                        (sql, msg)
                    continue
                if ref is None:  # DuckDB's DECIMAL(18) overflowed: the exact answer
                    con2 = duckdb.connect()
                    con2.register("r0", table)
                    con2.execute("CREATE VIEW r AS SELECT * REPLACE (d::DECIMAL(38, "
                                 f"{table['d'].type.scale}) AS d) FROM r0")
                    try:
                        ref = con2.sql(sql).fetchall()
                    except duckdb.OutOfRangeException:
                        continue
                assert_same_rows(ours, ref, ordered="ORDER BY" in sql)


@settings(deadline=None, max_examples=examples(8, 60), suppress_health_check=list(HealthCheck))
@given(data=st.data(), table=decimal_tables(), in_place=st.booleans())
def test_random_decimals_of_every_precision_on_the_cpu(data, table, in_place):
    """DECIMAL(1..38, s) columns, ingested or read in place, against constants of up to 38
    digits, in arithmetic, aggregates, keys and rows: DuckDB's answer or a one-line refusal,
    never a rounded one (issue 41). 8 examples in the default run (each compiles its
    queries' kernels), all 60 in the slow run."""
    sqls = data.draw(st.lists(decimal_queries(table), min_size=1, max_size=3))
    check_decimals(table, sqls, in_place)
