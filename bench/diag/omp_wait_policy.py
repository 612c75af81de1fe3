"""GNU OpenMP's wait policy and the CPU engine: the same warm queries in new processes,
with libgomp's default (``OMP_WAIT_POLICY`` set to an empty string, which libgomp rejects
with a warning and ignores: spin a while, then sleep) and with ``PASSIVE`` (sleep at once),
the two taking turns.

Usage: ``python bench/diag/omp_wait_policy.py STORE_DIR [--queries q08,u01,h02,t03]
[--rounds 3] [--reps 7]``; prints, per policy and query, the median of the rounds' medians
(ms), with the load average before and after (a busy machine is where the policies differ).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = """
import json, sys, time, bamql
from bamql.queries import all_queries
Q = all_queries()
out = {}
with bamql.connect(sys.argv[1], device="cpu") as con:
    for name in sys.argv[2].split(","):
        con.sql(Q[name])
        ts = []
        for _ in range(int(sys.argv[3])):
            t = time.perf_counter()
            con.sql(Q[name])
            ts.append((time.perf_counter() - t) * 1e3)
        out[name] = sorted(ts)[len(ts) // 2]
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("store")
    ap.add_argument("--queries", default="q08,u01,h02,t03")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    policies = {"libgomp default": "", "PASSIVE": "PASSIVE"}
    got: dict[str, list[dict]] = {p: [] for p in policies}
    print("load average before:", os.getloadavg())
    for _ in range(a.rounds):
        for label, value in policies.items():
            env = dict(os.environ, OMP_WAIT_POLICY=value)
            r = subprocess.run([sys.executable, "-c", CHILD, a.store, a.queries, str(a.reps)],
                               env=env, capture_output=True, text=True, check=True)
            got[label].append(json.loads(r.stdout.strip().splitlines()[-1]))
    print("load average after:", os.getloadavg())
    for label, runs in got.items():
        med = {q: statistics.median(r[q] for r in runs) for q in a.queries.split(",")}
        print(f"{label:>16}: " + "  ".join(f"{q} {v:.1f}" for q, v in med.items()))


if __name__ == "__main__":
    main()
