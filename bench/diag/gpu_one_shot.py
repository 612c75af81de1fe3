"""Where a one-shot ``bamql sql --device gpu`` spends its time and memory (issue 39).

Over an existing store (``DIR``): each phase of a one-shot timed inside one new process
(imports, the CUDA engine, connect, the first query, the same query with other constants,
close) with the peak resident memory after it; a cProfile of connect and of the first
query (their 25 costliest calls); and the CLI itself, ``python -m bamql.cli sql DIR ...
--device gpu`` as a new process (wall time and peak RSS from ``os.wait4``), for a query
answered from metadata, a filtered aggregate and the grouped query of session 42, with the
kernel directory warm. Usage: ``python bench/diag/gpu_one_shot.py DIR [--reps 3]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

GROUPED = ("SELECT payment_type, COUNT(*), AVG(fare_amount), SUM(tip_amount) FROM trips "
           "WHERE trip_distance > {d} AND pickup_location_id IN ({a}, {b}) GROUP BY 1")
QUERIES = (("count", "SELECT COUNT(*) FROM trips"),
           ("filter", "SELECT AVG(fare_amount) FROM trips WHERE trip_distance > 40"),
           ("grouped", GROUPED.format(d=3, a=236, b=161)))

_PHASES = r"""
import cProfile, io, pstats, resource, sys, time
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
marks = []
def mark(name):
    marks.append((name, time.perf_counter(), rss()))
mark("start")
import numpy, pyarrow
mark("numpy+pyarrow")
import bamql, bamql.api.session
mark("bamql's modules")
from numba import cuda
mark("numba.cuda")
cuda.current_context()
mark("CUDA context")
prof = {}
def profiled(name, f):
    p = cProfile.Profile(); p.enable(); r = f(); p.disable(); prof[name] = p; return r
con = profiled("connect", lambda: bamql.connect(sys.argv[1], device="gpu", backend="file"))
mark("connect")
res = profiled("first query", lambda: con.sql(sys.argv[2]))
mark("first query")
con.sql(sys.argv[3])
mark("other constants")
con.close()
mark("close")
for (_, t0, _), (name, t1, r) in zip(marks, marks[1:]):
    print(f"  {name:<18} {t1 - t0:7.3f} s   peak RSS {r:7.0f} MiB")
st = res.stats
print(f"  query stats: {st.seconds * 1e3:.0f} ms, compile {st.compile_seconds:.3f} s, "
      f"kernel {st.kernel_seconds * 1e3:.1f} ms, setup {st.setup_seconds:.3f} s, "
      f"{st.rows_matched:,} rows matched")
for name, p in prof.items():
    s = io.StringIO()
    pstats.Stats(p, stream=s).sort_stats("cumulative").print_stats(25)
    print(f"-- cProfile of {name}:")
    print("\n".join(l for l in s.getvalue().splitlines() if "importlib" not in l)[:6000])
"""


def _shot(data: str, sql: str) -> tuple[float, float]:
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "bamql.cli", "sql", data, sql, "--device", "gpu"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"bamql sql failed: {p.stderr.read().decode().strip()}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    _shot(a.data, QUERIES[2][1])  # the kernels compiled into the warm directory
    print("one-shot bamql sql --device gpu (file backend, kernels warm), new processes:")
    for label, sql in QUERIES:
        runs = sorted(_shot(a.data, sql) for _ in range(a.reps))
        wall, rss = runs[len(runs) // 2][0], max(r[1] for r in runs)
        print(f"  {label:<8} median {wall:.2f} s (best {runs[0][0]:.2f}), peak RSS {rss:.0f} MiB")
    print("phases of one process (the grouped query, then other constants):")
    r = subprocess.run([sys.executable, "-c", _PHASES, a.data, QUERIES[2][1],
                        GROUPED.format(d=7, a=48, b=79)], capture_output=True, text=True)
    print(r.stdout + (r.stderr[-3000:] if r.returncode else ""))


if __name__ == "__main__":
    main()
