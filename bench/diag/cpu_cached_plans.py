"""The CPU engine over files in the OS page cache: its disk plans (``file`` medium) against
plans for memory (``cached`` medium), Q1-Q6 alternating in one process.

    python bench/diag/cpu_cached_plans.py STORE_DIR [--reps 7] [--out result.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import bamql
from bamql.queries import TAXI_QUERIES, load


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out: dict = {"store": a.store, "reps": a.reps, "cores": os.cpu_count(),
                 "machine": platform.node(), "load": os.getloadavg(), "ms": {}}
    con = bamql.connect(a.store, device="cpu")
    for q in TAXI_QUERIES:
        sql = load(q)
        times: dict[str, list[float]] = {"file": [], "cached": []}
        paths = {}
        for m in times:
            con.medium = m
            con.sql(sql)  # compile, read once
        for _ in range(a.reps):
            for m in times:
                con.medium = m
                t = time.perf_counter()
                r = con.sql(sql)
                times[m].append(time.perf_counter() - t)
                paths[m] = "".join(str(c.path)[0] for c in r.stats.columns.values())
        out["ms"][q] = {m: round(statistics.median(v) * 1e3, 1) for m, v in times.items()}
        out["ms"][q]["paths"] = paths
        print(q, out["ms"][q], flush=True)
    con.close()
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
