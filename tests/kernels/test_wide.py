"""Wide predicates as programs (``kernels.wide``): the interpreter agrees with the NumPy
reference (``fused.evaluate``) row by row, on NULLs, NaN, +-inf, -0.0 and int64 extremes;
and the GPU template runs them (numba's CUDA simulator) with DuckDB's answers."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from bamql.fused import ir
from bamql.fused.evaluate import evaluate
from bamql.kernels import wide
from bamql.kernels.codegen import Params

N = 97
I64 = np.iinfo(np.int64)


def _env():
    rng = np.random.default_rng(4)
    f = rng.choice([0.0, -0.0, 1.5, -2.25, 7.0, np.inf, -np.inf, np.nan, 3.0], N)
    i = rng.choice([0, 1, -1, 5, 7, I64.max, I64.min + 1, 42], N).astype(np.int64)
    return {"f": (f, rng.random(N) > 0.2), "i": (i, rng.random(N) > 0.2)}


def _leaf(rnd: random.Random) -> ir.Expr:
    col = rnd.choice([ir.Col("f", "float"), ir.Col("i", "int")])
    pick = rnd.random()
    if pick < 0.1:
        return ir.IsNull(col, negated=rnd.random() < 0.5)
    if pick < 0.15:
        return ir.Lit(rnd.choice([True, False, None]), "bool")
    consts = [0, 1, -1, 5, 7, 42, I64.max, I64.min + 1] if col.kind == "int" else \
        [0.0, -0.0, 1.5, 7, -2.25, float("inf"), float("nan"), 3, None]
    if col.kind == "int" and rnd.random() < 0.2:
        consts = [2.5, -0.5, 1e30]  # no integer equals them
    if pick < 0.35:
        vals = tuple(ir.Lit(rnd.choice(consts), "int" if col.kind == "int" else "float")
                     for _ in range(rnd.randint(1, 5)))
        return ir.InList(col, vals, negated=rnd.random() < 0.5)
    op = rnd.choice(ir.CMP_OPS)
    v = rnd.choice(consts)
    return ir.Cmp(op, col, ir.Lit(v, "null" if v is None else col.kind))


def _tree(rnd: random.Random, depth: int) -> ir.Expr:
    if depth == 0 or rnd.random() < 0.2:
        return _leaf(rnd)
    k = rnd.random()
    if k < 0.15:
        return ir.Not(_tree(rnd, depth - 1))
    args = tuple(_tree(rnd, depth - 1) for _ in range(rnd.randint(2, 6)))
    return ir.And(args) if k < 0.55 else ir.Or(args)


def _run_rows(e: ir.Expr, env) -> tuple[np.ndarray, np.ndarray]:
    p = Params()
    slots = {"f": 0, "i": 1}
    off, n = wide.encode(e, slots, p)
    PI, PF, LI, LF = p.arrays()
    vs, oks = np.zeros(N, bool), np.zeros(N, bool)
    sv, sok = np.zeros(wide.STACK, bool), np.zeros(wide.STACK, bool)
    for r in range(N):
        fv = np.array([env["f"][0][r], 0.0])
        iv = np.array([0, env["i"][0][r]], np.int64)
        okv = np.array([env["f"][1][r], env["i"][1][r]])
        vs[r], oks[r] = wide.run(PI, off, n, PF, LI, LF, fv, iv, okv, sv, sok)
    return vs, oks


@pytest.mark.parametrize("seed", range(12))
def test_programs_agree_with_the_numpy_reference(seed):
    rnd = random.Random(seed)
    env = _env()
    for _ in range(6):
        e = _tree(rnd, 4)
        # the reference compares ints with a non-integer constant as SQL does; the translator
        # never leaves such a comparison (``int_compare``), so neither do these programs
        want_v, want_ok = evaluate(e, env, N)
        got_v, got_ok = _run_rows(e, env)
        assert (got_ok == want_ok).all(), e
        assert (got_v[got_ok] == np.asarray(want_v, bool)[want_ok]).all(), e


def test_unencodable_and_too_deep_predicates_are_left_to_the_compiler():
    x = ir.Col("x", "int")
    arith = ir.Cmp(">", ir.Arith("+", x, x, "int"), ir.Lit(1, "int"))
    assert wide.encode(ir.Or((arith, ir.Cmp("=", x, ir.Lit(1, "int")))), {"x": 0}, Params()) is None
    deep: ir.Expr = ir.Cmp("=", x, ir.Lit(1, "int"))
    for k in range(wide.STACK + 2):
        deep = ir.And((ir.Cmp("<>", x, ir.Lit(k, "int")), deep))
    assert wide.encode(deep, {"x": 0}, Params()) is None
    flat = ir.Or(tuple(ir.Cmp("<", x, ir.Lit(k, "int")) for k in range(5000)))
    assert wide.encode(flat, {"x": 0}, Params()) is not None  # a flat OR stays shallow


SCRIPT = textwrap.dedent("""
    import faulthandler, random, tempfile
    faulthandler.dump_traceback_later(840, exit=True)  # a hang shows its threads' stacks
    from pathlib import Path
    import pyarrow.parquet as pq
    import bamql
    from bamql.datasets.generator import GenParams, generate_chunk
    from bamql.gpu import kernel as kgpu
    from bamql.storage.ingest import ingest
    from tests.reference import assert_same_rows, duck

    d = Path(tempfile.mkdtemp())
    t = generate_chunk(GenParams(rows=1500, seed=3, williamsburg_share=0.02), 0)
    pq.write_table(t, d / "t.parquet")
    ingest([d / "t.parquet"], d / "data" / "trips", page_size=512)
    rnd = random.Random(1)
    def terms(n):
        return " OR ".join(
            f"(fare_amount > {round(rnd.uniform(5, 80), 2)} AND tip_amount < {round(rnd.uniform(0, 4), 2)}"
            f" AND passenger_count <> {rnd.randint(0, 6)})" for _ in range(n))
    shape = "SELECT COUNT(*), SUM(trip_distance) FROM trips WHERE ({}) AND pickup_location_id IS NOT NULL"
    for backend in ("gpu", "host", "file"):
        with bamql.connect(d / "data", device="gpu", backend=backend, cache="64KiB") as con:
            before = None
            for n in (30, 30, 45):
                sql = shape.format(terms(n))
                assert_same_rows(con.sql(sql).rows(), duck(sql, t), ordered=False)
                if before is None:
                    before = kgpu.kernel_cache_size()
            # every wide predicate over the same columns runs the same kernel
            assert kgpu.kernel_cache_size() == before, (kgpu.kernel_cache_size(), before)
        print(backend, "wide ok")
""")


@pytest.mark.slow  # in CI's slow run; the default run keeps lighter simulator checks
def test_wide_predicates_in_the_gpu_template_match_duckdb_in_the_simulator():
    pytest.importorskip("numba.cuda")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=root, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("wide ok") == 3
