"""The GPU template's source depends on a query's shape, not its constants (no GPU needed:
``kernel_source`` is plain Python), and in numba's CUDA simulator queries that differ only in
constants share one kernel, compiled from the same module text, with nothing kept on disk."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import bamql
from bamql.fused import ir
from bamql.gpu import kernel as kgpu
from bamql.kernels import cpu_loops as kcpu

PAIRS = [
    ("SELECT COUNT(*), AVG(trip_distance) FROM trips WHERE pickup_location_id IN (255, 256)",
     "SELECT COUNT(*), AVG(trip_distance) FROM trips WHERE pickup_location_id IN (10, 11)"),
    ("SELECT COUNT(*), SUM(tip_amount) FROM trips WHERE fare_amount > 5",
     "SELECT COUNT(*), SUM(tip_amount) FROM trips WHERE fare_amount > 7"),
    ("SELECT COUNT(*), SUM(tip_amount) FROM trips WHERE fare_amount > 5.5",
     "SELECT COUNT(*), SUM(tip_amount) FROM trips WHERE fare_amount > 70.25"),
    # the planner orders the two bounds by their estimated selectivity, which the bounds move
    ("SELECT COUNT(*), MAX(tip_amount) FROM trips WHERE fare_amount BETWEEN 5 AND 10",
     "SELECT COUNT(*), MAX(tip_amount) FROM trips WHERE fare_amount BETWEEN 7 AND 300"),
    ("SELECT COUNT(*) FROM trips WHERE trip_distance BETWEEN 0.5 AND 1.5 AND fare_amount < 9",
     "SELECT COUNT(*) FROM trips WHERE trip_distance BETWEEN 2.25 AND 30.75 AND fare_amount < 90"),
    ("SELECT payment_type, COUNT(*) FROM trips WHERE trip_distance > 3 GROUP BY 1 "
     "ORDER BY 2 DESC LIMIT 3",
     "SELECT payment_type, COUNT(*) FROM trips WHERE trip_distance > 3 GROUP BY 1 "
     "ORDER BY 2 DESC LIMIT 5"),
    ("SELECT COUNT(*) FROM trips WHERE pickup_datetime >= TIMESTAMP '2019-01-05 00:00:00' "
     "AND passenger_count = 1",
     "SELECT COUNT(*) FROM trips WHERE pickup_datetime >= TIMESTAMP '2019-02-09 00:00:00' "
     "AND passenger_count = 2"),
    ("SELECT SUM(fare_amount * 2 + 1) FROM trips WHERE trip_distance < 2",
     "SELECT SUM(fare_amount * 3 + 5) FROM trips WHERE trip_distance < 4"),
    ("SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = 'Y'",
     "SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = 'N'"),
]


def _sources(con, sql: str, queue: bool) -> tuple[str, set[str], object]:
    """The GPU kernel's source (as the engine makes it, the first stage's columns read
    directly), the CPU kernels' sources, and the constants of the GPU one."""
    q = con._translate(sql)
    plan = con.plan(q)
    store = con.store(q.table).parts[0]
    used: list[str] = []
    for e in (plan.query.predicate, *plan.query.keys, *plan.query.aggs):
        used += [c for c in ir.columns_of(e) if c not in used]
    scan = set(plan.stages[0].columns) if plan.stages else set()
    cached = [n for n in used if n not in scan]
    cols = {n: kgpu.column_layout(store.column(n), store.page_size) for n in used}
    sent = {n: c.sentinel for n, c in store.columns.items()}
    scales = {n: c.scale for n, c in store.columns.items()}
    src, params = kgpu.kernel_source(plan.query, plan.stages, plan.key_domains, cols, sent, scan,
                                     {n: i for i, n in enumerate(cached)}, queue=queue,
                                     scales=scales)
    cpu = {kcpu.filter_source(s.predicate, ir.columns_of(s.predicate), sent, scales)[0]
           for s in plan.stages}
    agg_cols = sorted({c for e in (*q.keys, *q.aggs) for c in ir.columns_of(e)})
    cpu.add(kcpu.agg_source(q.keys, plan.key_domains, q.aggs, agg_cols, sent, scales)[0])
    return src, cpu, params


@pytest.fixture(scope="module")
def con(sample_store):
    with bamql.connect(sample_store, device="cpu") as c:
        yield c


@pytest.mark.parametrize("queue", [False, True])
@pytest.mark.parametrize("a, b", PAIRS)
def test_queries_differing_in_constants_have_one_kernel_source(con, a, b, queue):
    ga, ca, pa = _sources(con, a, queue)
    gb, cb, pb = _sources(con, b, queue)
    assert ga == gb
    assert ca == cb
    if "LIMIT" not in a:  # the constants differ, as arguments
        assert [x.tolist() for x in pa.arrays()] != [x.tolist() for x in pb.arrays()]


def test_a_group_reads_its_columns_before_testing_any_predicate(con):
    """The reordered predicates of a group come after every load of the group's columns,
    so a column read directly is read (and written through) for every candidate row."""
    src, _, _ = _sources(con, PAIRS[4][0], False)
    lines = src.splitlines()
    first_test = next(i for i, line in enumerate(lines) if "live = live and" in line)
    loads = [i for i, line in enumerate(lines) if line.strip().startswith(("x_c_trip_distance =",
                                                                           "x_c_fare_amount ="))]
    assert len(loads) == 2 and loads[0] < first_test
    assert sum("live = live and" in line for line in lines) == 3


SIM_SCRIPT = textwrap.dedent("""
    import json, sys
    import bamql
    from bamql.gpu import kernel as kgpu
    from bamql.kernels import diskcache
    shape = ("SELECT COUNT(*), MAX(tip_amount), SUM(trip_distance) FROM trips "
             "WHERE fare_amount BETWEEN {lo} AND {hi} AND pickup_location_id IN ({a}, {b})")
    out = []
    with bamql.connect(sys.argv[1], device="gpu", backend="host", cache="64KiB") as con:
        assert "simulator" in con.note
        for lo, hi, a, b in ((5, 10, 236, 161), (7, 300, 10, 11), (3, 40, 237, 48)):
            sql = shape.format(lo=lo, hi=hi, a=a, b=b)
            out.append([sql, con.sql(sql).rows(), kgpu.kernel_cache_size()])
    print(json.dumps({"runs": out, "dir": str(diskcache.kernel_dir())}))
""")


@pytest.mark.slow  # in CI's slow run: three queries through the simulator
def test_the_simulator_shares_one_kernel_across_constants(sample_store, tmp_path):
    from tests.conftest import SAMPLES
    from tests.reference import assert_same_rows, duck

    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", BAMQL_CACHE_DIR=str(tmp_path / "cache"))
    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    r = subprocess.run([sys.executable, "-c", SIM_SCRIPT, str(sample_store)], env=env,
                       capture_output=True, text=True, timeout=600, cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    import json

    import pyarrow as pa
    import pyarrow.csv as pacsv

    out = json.loads(r.stdout.strip().splitlines()[-1])
    table = pa.concat_tables(pacsv.read_csv(p) for p in SAMPLES)
    for sql, rows, _ in out["runs"]:
        assert_same_rows(rows, duck(sql, table), ordered=False)
    assert len({n for *_, n in out["runs"]}) == 1  # the kernel compiled for the first query
    assert out["runs"][0][1][0][0] > 0  # a query with matches
    # the simulator compiles nothing: no module file, nor numba's files
    assert not list((tmp_path / "cache").rglob("k_*"))
