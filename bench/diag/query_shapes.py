"""Compile cost by query shape: constants are kernel arguments, so queries that differ only
in a constant share one kernel, and long IN lists, wide ORs and deep nesting stay cheap.

Runs on one small generated table, in one process, and writes JSON:

``literals``: ``--queries`` queries ``WHERE fare_amount > <x>`` with a new ``x`` each time
  (as a dashboard re-runs one query): kernels compiled, resident memory before and after,
  and the median time per query; every 100th answer is checked against DuckDB.
``in_list``: ``pickup_location_id IN (<n> values)`` for each ``--in-sizes`` n: seconds to
  plan, compile and run, checked against DuckDB.
``or_terms``: an OR of n equalities (``x = 1 OR x = 2 ...``) and an OR of n range terms over
  two columns (``fare_amount > a OR tip_amount < b ...``), each ``--or-sizes`` n.
``nesting``: ``--depth`` nested parentheses, ``NOT`` repeated and ``+`` chained: an
  answer or a one-line error, and how long it took.

Usage: ``python bench/diag/query_shapes.py --out bench/results/vm/query-shapes-vm.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _rss_mb() -> float:
    """Resident memory now (Linux /proc), in MiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _timed(con, duck, sql: str, check: bool) -> dict:
    t = time.perf_counter()
    try:
        r = con.sql(sql).to_arrow()
    except Exception as e:  # a clean refusal is an outcome, recorded in one line
        return {"seconds": time.perf_counter() - t, "error": str(e).splitlines()[0][:200]}
    out = {"seconds": time.perf_counter() - t}
    if check:
        want = duck.sql(sql.replace("FROM trips", "FROM t")).fetchall()
        got = [tuple(row.values()) for row in r.to_pylist()]
        out["matches_duckdb"] = _same(got, want)
    return out


def _same(got, want) -> bool:
    """Rows equal as the test suite compares them (``tests.reference``)."""
    from tests.reference import same_value

    return len(got) == len(want) and all(
        len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
        for a, b in zip(got, want, strict=True))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--in-sizes", default="1000,100000")
    ap.add_argument("--or-sizes", default="100,1000")
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--backend", default=None, help="GPU backend (host, gpu, file)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)

    import duckdb
    import numpy as np

    import bamql
    from bamql.datasets.generator import GenParams, generate_chunk
    from bamql.gpu import kernel as kgpu
    from bamql.kernels import cpu_loops as kcpu
    from bamql.storage.ingest import ingest

    work = Path(tempfile.mkdtemp(prefix="bamql-shapes-"))
    table = generate_chunk(GenParams(rows=a.rows, seed=11, williamsburg_share=0.01), 0)
    import pyarrow.parquet as pq

    pq.write_table(table, work / "t.parquet")
    ingest([work / "t.parquet"], work / "data" / "trips", page_size=4096)
    duck = duckdb.connect()
    duck.sql(f"CREATE TABLE t AS SELECT * FROM '{work / 't.parquet'}'")
    con = bamql.connect(work / "data", device=a.device, **({"backend": a.backend} if a.backend else {}))
    res: dict = {"machine": platform.node(), "cpu": platform.processor() or platform.machine(),
                 "cores": os.cpu_count(), "python": sys.version.split()[0],
                 "rows": a.rows, "device": con.device,
                 "gpu": con.gpu.name if con.gpu is not None else None, "backend": con.backend}

    # -- the same query with a new constant each time ---------------------------------
    rng = np.random.default_rng(3)
    first = _timed(con, duck, "SELECT COUNT(*), AVG(tip_amount) FROM trips WHERE fare_amount > 1.5",
                   True)
    kernels = lambda: kcpu.kernel_cache_size() + kgpu.kernel_cache_size()  # noqa: E731
    k0, rss0 = kernels(), _rss_mb()
    times, wrong = [], 0
    for i in range(a.queries):
        x = round(float(rng.uniform(0, 80)), 2)
        r = _timed(con, duck, f"SELECT COUNT(*), AVG(tip_amount) FROM trips WHERE fare_amount > {x}",
                   i % 100 == 0)
        times.append(r["seconds"])
        wrong += r.get("matches_duckdb") is False
    res["literals"] = {
        "queries": a.queries, "first_query_s": first["seconds"],
        "kernels_before": k0, "kernels_after": kernels(),
        "rss_before_mb": round(rss0, 1), "rss_after_mb": round(_rss_mb(), 1),
        "rss_growth_mb": round(_rss_mb() - rss0, 1),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "median_query_ms": round(1e3 * statistics.median(times), 3),
        "checked": (a.queries + 99) // 100, "wrong": wrong,
    }
    print(json.dumps(res["literals"]), flush=True)

    # -- long IN lists ------------------------------------------------------------------
    res["in_list"] = []
    for n in (int(x) for x in a.in_sizes.split(",")):
        vals = ", ".join(str(v) for v in range(1, 2 * n, 2))  # zones among odd numbers
        r = _timed(con, duck, f"SELECT COUNT(*), SUM(trip_distance) FROM trips "
                              f"WHERE pickup_location_id IN ({vals})", True)
        res["in_list"].append({"values": n, **r})
        print("IN", n, r, flush=True)

    # -- wide ORs -----------------------------------------------------------------------
    res["or_terms"] = []
    for n in (int(x) for x in a.or_sizes.split(",")):
        eqs = " OR ".join(f"dropoff_location_id = {v}" for v in range(n))
        r = _timed(con, duck, f"SELECT COUNT(*) FROM trips WHERE {eqs}", True)
        res["or_terms"].append({"terms": n, "form": "equalities", **r})
        print("OR=", n, r, flush=True)
        rng2 = np.random.default_rng(n)
        rs = " OR ".join(f"(fare_amount > {round(float(rng2.uniform(60, 400)), 2)} AND "
                         f"tip_amount < {round(float(rng2.uniform(0, 3)), 2)})"
                         for _ in range(n // 2))
        r = _timed(con, duck, f"SELECT COUNT(*) FROM trips WHERE {rs}", True)
        res["or_terms"].append({"terms": n, "form": "ranges over two columns", **r})
        print("OR<>", n, r, flush=True)

    # -- deep nesting -------------------------------------------------------------------
    d = a.depth
    res["nesting"] = []
    for form, sql in (
        ("parentheses", "SELECT COUNT(*) FROM trips WHERE " + "(" * d + "fare_amount > 5" + ")" * d),
        ("NOT", "SELECT COUNT(*) FROM trips WHERE " + "NOT " * d + "fare_amount > 5"),
        ("+", "SELECT SUM(fare_amount" + " + 1" * d + ") FROM trips"),
    ):
        r = _timed(con, duck, sql, False)
        res["nesting"].append({"depth": d, "form": form, **r})
        print("nest", form, r, flush=True)

    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    con.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
