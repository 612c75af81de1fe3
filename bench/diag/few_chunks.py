"""Cold queries whose compressed reads are few chunks: decompressed on host threads against
one nvCOMP call, alternating in one process, DuckDB beside them.

The file backend leaves a query's chunks to host threads where they hold fewer pages than
repay the GPU's call (``physical.cost.inflates_on_gpu``); ``gpu`` here forces the call and
``host`` the host threads, the plan the same (the planner does not ask). OS page cache
dropped and GPU cache emptied before every run; answers checked against DuckDB.

    python bench/diag/few_chunks.py STORE PARQUET_DIR [--queries q01,q06] [--reps 5]
        [--out result.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import bamql
from bamql.bench.harness import drop_os_cache, same_rows
from bamql.physical import cost
from bamql.queries import load


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store")
    ap.add_argument("parquet")
    ap.add_argument("--queries", default="q01,q06")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import duckdb

    dk = duckdb.connect()
    dk.execute("SET error_on_division_by_zero=false")
    con = bamql.connect(a.store, device="gpu", backend="file")
    decide = cost.inflates_on_gpu
    ways = {"gpu": lambda *a: True, "host": lambda *a: False}
    out: dict = {"store": a.store, "reps": a.reps, "runs": []}
    for q in a.queries.split(","):
        sql = load(q)
        want = dk.sql(sql.replace("FROM trips", f"FROM read_parquet('{a.parquet}/*.parquet')")
                      ).fetchall()
        times: dict[str, list[float]] = {w: [] for w in [*ways, "duckdb"]}
        ok = True
        for rep in range(a.reps + 1):  # the first round compiles and is left out
            for w, r in ways.items():
                cost.inflates_on_gpu = r
                con.gpu.clear_cache()
                drop_os_cache()
                t = time.perf_counter()
                rows = con.sql(sql).rows()
                if rep:
                    times[w].append(time.perf_counter() - t)
                ok = ok and same_rows(rows, want)
            cost.inflates_on_gpu = decide
            drop_os_cache()
            t = time.perf_counter()
            dk.sql(sql.replace("FROM trips", f"FROM read_parquet('{a.parquet}/*.parquet')")).fetchall()
            if rep:
                times["duckdb"].append(time.perf_counter() - t)
        for w, ts in times.items():
            row = {"query": q, "way": w, "ms": [round(x * 1e3, 1) for x in ts],
                   "median_ms": round(statistics.median(ts) * 1e3, 1), "ok": ok}
            out["runs"].append(row)
            print(q, w, row["median_ms"], "ms", row["ms"], "ok", ok, flush=True)
    con.close()
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
