"""OS-cached, GPU-cold runs of the file backend: one connection alone, then two taking turns.

The harness's ``warm`` mode (files in the OS page cache, GPU cache emptied before each
run) showed each run 3-6x slower than the first when other connections ran in between.
This times Q1-Q6 in three arrangements on one store (the workdir of a ``bamql bench`` run):
one connection, runs back to back; the same with a 1 s pause before each run; and two
connections (the ``nvcomp`` plan and a ``queue`` plan) taking turns.

    python bench/diag/os_cached_runs.py STORE_DIR [--reps 5] [--out result.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import bamql
from bamql.queries import TAXI_QUERIES, load


def timed(con, sql: str) -> float:
    con.gpu.clear_cache()
    t = time.perf_counter()
    con.sql(sql)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out: dict = {"store": a.store, "reps": a.reps, "ms": {}}
    a_con = bamql.connect(a.store, device="gpu", backend="file")
    b_con = bamql.connect(a.store, device="gpu", backend="file", medium="queue")
    for q in TAXI_QUERIES:
        sql = load(q)
        timed(a_con, sql), timed(b_con, sql)  # compile, read the files once
        alone = [timed(a_con, sql) for _ in range(a.reps)]
        paused = []
        for _ in range(a.reps):
            time.sleep(1.0)
            paused.append(timed(a_con, sql))
        turns_a, turns_b = [], []
        for _ in range(a.reps):
            turns_a.append(timed(a_con, sql))
            turns_b.append(timed(b_con, sql))
        row = {k: [round(x * 1e3, 1) for x in v] for k, v in
               (("alone", alone), ("paused", paused), ("turns_nvcomp", turns_a),
                ("turns_queue", turns_b))}
        out["ms"][q] = row
        for name, con in (("nvcomp", a_con), ("queue", b_con)):
            r = con.sql(sql)
            out.setdefault("plans", {}).setdefault(q, {})[name] = {
                "explain": r.explain().splitlines()[0],
                "paths": {n: str(c.path) for n, c in r.stats.columns.items()}}
        print(q, {k: statistics.median(v) for k, v in row.items()}, flush=True)
    a_con.close(), b_con.close()
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
