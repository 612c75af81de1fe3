"""Random tables and random queries (SQLancer-style): hypothesis draws a table (row count,
NULL shares, value ranges, NaN/inf, timestamps around 1970, unicode strings), a store shape
and queries over it; bamql must answer as DuckDB does on the same rows. On the CPU engine
in-process, and on the GPU engine in numba's CUDA simulator in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bamql
from bamql.storage.ingest import ingest
from tests.reference import assert_same_rows, duck_tables

REPO = Path(__file__).resolve().parents[2]
WORDS = ["", "a", "b", "Z", "é", "日本", "🚕"]
NUMERIC = ["i", "g", "x", "y", "z"]


@st.composite
def tables(draw) -> pa.Table:
    """A random table ``r``: i (int, wide range), g (int 0..5, a key), x (2-decimal floats),
    y (whole floats), z (floats with NaN/inf), t (timestamps around 1970), s (strings)."""
    n = draw(st.integers(1, 400))
    seed = draw(st.integers(0, 2**32 - 1))
    null = draw(st.sampled_from([0.0, 0.0, 0.1, 0.5, 1.0]))
    span = draw(st.sampled_from([10, 1000, 10**6, 2**40, 2**60]))
    specials = draw(st.booleans())
    rng = np.random.default_rng(seed)

    def mask() -> np.ndarray:
        return rng.random(n) < null

    z = rng.normal(0, 100, n)
    if specials:
        z[rng.random(n) < 0.2] = rng.choice([np.nan, np.inf, -np.inf, -0.0], 1)[0]
    t = rng.integers(-3 * 10**15, 3 * 10**15, n)  # 1875..2065 in microseconds
    return pa.table({
        "i": pa.array(rng.integers(-span, span, n), pa.int64(), mask=mask()),
        "g": pa.array(rng.integers(0, 6, n), pa.int64(), mask=mask()),
        "x": pa.array(np.round(rng.uniform(-500, 500, n), 2), pa.float64(), mask=mask()),
        "y": pa.array(np.round(rng.uniform(-1e4, 1e4, n)), pa.float64(), mask=mask()),
        "z": pa.array(z, pa.float64(), mask=mask()),
        "t": pa.array(t, pa.timestamp("us"), mask=mask()),
        "s": pa.array([WORDS[j] for j in rng.integers(0, len(WORDS), n)], pa.string(), mask=mask()),
    })


@st.composite
def leaf(draw) -> str:
    c = draw(st.sampled_from(NUMERIC))
    kind = draw(st.sampled_from(["cmp", "between", "in", "null", "str", "time", "arith"]))
    lit = draw(st.sampled_from(["0", "1", "-1", "3", "2.5", "-100", "250.75", "1000"]))
    if kind == "cmp":
        return f"{c} {draw(st.sampled_from(['=', '<>', '<', '<=', '>', '>=']))} {lit}"
    if kind == "between":
        return f"{c} BETWEEN -{lit.lstrip('-')} AND {lit.lstrip('-')}"
    if kind == "in":  # integer constants: DuckDB would cast a wide BIGINT to a DECIMAL
        return f"{c} {draw(st.sampled_from(['', 'NOT ']))}IN (0, 1, {int(float(lit))})"
    if kind == "null":
        return f"{draw(st.sampled_from([*NUMERIC, 't', 's']))} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if kind == "str":
        return f"s {draw(st.sampled_from(['=', '<>', '<', '>=']))} '{draw(st.sampled_from(WORDS + ['m']))}'"
    if kind == "time":
        year = draw(st.sampled_from([1900, 1969, 1970, 2000, 2050]))
        op = draw(st.sampled_from(["<", ">="]))
        if draw(st.booleans()):
            return f"EXTRACT({draw(st.sampled_from(['HOUR', 'MINUTE', 'DOW']))} FROM t) {op} 3"
        return f"t {op} TIMESTAMP '{year}-06-15 12:00:00'"
    op = draw(st.sampled_from(["+", "-", "*"]))
    # (an integer product could overflow BIGINT, an error in DuckDB: multiply by a float)
    c2 = draw(st.sampled_from(["x", "y", "z"] if op == "*" else NUMERIC))
    return f"{c} {op} {c2} > {lit}"


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
        f"SUM({c} + {c2})", f"MAX({c} - {c2})", f"AVG({c} / {c2})", "MIN(t)", "MAX(s)", "COUNT(s)",
    ]), min_size=1, max_size=3))
    key = draw(st.sampled_from([None, None, "g", "s", "EXTRACT(HOUR FROM t)", "EXTRACT(DOW FROM t)"]))
    where = draw(st.one_of(st.none(), predicates()))
    sql = f"SELECT {', '.join(([key] if key else []) + aggs)} FROM r"
    if where:
        sql += f" WHERE {where}"
    if key:
        sql += " GROUP BY 1 ORDER BY 1"
    return sql


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
                ours = con.sql(sql).rows()
                assert_same_rows(ours, duck_tables(sql, {"r": table}), ordered="ORDER BY" in sql)


@settings(deadline=None, suppress_health_check=list(HealthCheck))
@given(table=tables(), sqls=st.lists(queries(), min_size=1, max_size=2),
       page_size=st.sampled_from([512, 4096]), floats=st.sampled_from(["auto", "plain"]))
def test_random_tables_and_queries_on_the_cpu(table, sqls, page_size, floats):
    check(table, sqls, page_size, floats)


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


def test_random_tables_and_queries_in_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONWARNINGS="ignore")
    code = "from tests.sql.test_random import simulator_examples; simulator_examples(15); print('ok')"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=900, cwd=REPO)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout[-3000:] + r.stderr[-5000:]
