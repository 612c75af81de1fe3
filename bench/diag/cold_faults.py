"""A cold query's fixed milliseconds: how much of them is code, not data.

Dropping the OS page cache drops file-backed code as well as data: right after it, a query
reads back from disk the pages of the shared libraries and Python modules it executes
(CUDA, numba, nvCOMP, pyarrow, DuckDB's library) besides the table's bytes. Each query runs
cold in two ways, alternating, for bamql's GPU ``file`` backend and for DuckDB in one
process: ``cold`` (drop the cache, run the query) and ``warm code`` (drop the cache, run the
same query by the same engine over a different, tiny table, which faults the code back in,
then run the query: its table's bytes are still cold). The process's major page faults
(``getrusage``) are counted over each timed query.

    python bench/diag/cold_faults.py STORE PARQUET_DIR TINY_STORE TINY_PARQUET_DIR
        [--queries q01,q06] [--reps 3] [--out result.json]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time

import bamql
from bamql.bench.harness import drop_os_cache, same_rows
from bamql.queries import load


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_majflt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store")
    ap.add_argument("parquet")
    ap.add_argument("tiny_store")
    ap.add_argument("tiny_parquet")
    ap.add_argument("--queries", default="q01,q06")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import duckdb

    dk = duckdb.connect()
    dk.execute("SET error_on_division_by_zero=false")
    big = bamql.connect(a.store, device="gpu", backend="file")
    tiny = bamql.connect(a.tiny_store, device="gpu", backend="file")

    def bamql_run(con, sql):
        con.gpu.clear_cache()
        return con.sql(sql).rows()

    def duck_run(src, sql):
        return dk.sql(sql.replace("FROM trips", f"FROM read_parquet('{src}/*.parquet')")).fetchall()

    engines = {
        "bamql-gpu-file": (lambda sql: bamql_run(big, sql), lambda sql: bamql_run(tiny, sql)),
        "duckdb": (lambda sql: duck_run(a.parquet, sql), lambda sql: duck_run(a.tiny_parquet, sql)),
    }
    out: dict = {"store": a.store, "parquet": a.parquet, "reps": a.reps, "runs": []}
    for q in a.queries.split(","):
        sql = load(q)
        for run, warm_up in engines.values():  # compile every kernel once, outside the timings
            run(sql)
            warm_up(sql)
        want = engines["duckdb"][0](sql)
        for name, (run, warm_up) in engines.items():
            for how in ("cold", "warm code"):
                ts, fs, ok = [], [], True
                for _ in range(a.reps):
                    drop_os_cache()
                    if how == "warm code":
                        warm_up(sql)
                    f, t = _faults(), time.perf_counter()
                    rows = run(sql)
                    ts.append(time.perf_counter() - t)
                    fs.append(_faults() - f)
                    ok = ok and same_rows(rows, want)
                row = {"query": q, "engine": name, "how": how,
                       "ms": [round(x * 1e3, 1) for x in ts],
                       "median_ms": round(statistics.median(ts) * 1e3, 1),
                       "major_faults": fs, "ok": ok}
                out["runs"].append(row)
                print(q, name, how, row["median_ms"], "ms", row["ms"], "faults", fs, "ok", ok,
                      flush=True)
    big.close()
    tiny.close()
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
