"""Cache-pressure stress: every answer of the GPU backends checked against DuckDB when the
page cache is far smaller than a query's working set, with several threads on one session.

Generates (once) trips with ``bamql gen``, ingests them with small pages and row groups,
then runs a fixed query list at selectivities from a few rows to every row, on each backend
and cache size, from ``--threads`` threads sharing one session. A query whose answer differs
from DuckDB's (on the same rows, in memory) is a mismatch; the log has one JSON line per
(backend, cache, query) and a summary line. Exit status 1 on any mismatch or error.

    python bench/diag/cache_pressure.py --dir /tmp/cp --rows 3000000 \
        --caches 16KiB,256KiB,4MiB --backends host,file,gpu --threads 8 --log cp.jsonl
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.orc as paorc

import bamql
from bamql.bench.harness import same_value
from bamql.queries import all_queries

#: the queries the issue saw wrong, then selectivities from a handful of rows to all of them
QUERIES = [
    "SELECT payment_type, COUNT(*) FROM trips GROUP BY payment_type HAVING COUNT(*) > 10 ORDER BY 2 DESC",
    "SELECT EXTRACT(HOUR FROM pickup_datetime) AS h, COUNT(*), AVG(trip_distance) FROM trips "
    "GROUP BY 1 ORDER BY 1",
    "SELECT vendor_id, MIN(pickup_datetime), MAX(dropoff_datetime) FROM trips GROUP BY vendor_id "
    "ORDER BY 1",
    "SELECT AVG(trip_distance), AVG(total_amount), AVG(extra), AVG(fare_amount), AVG(tolls_amount) "
    "FROM trips WHERE pickup_location_id IN (255, 256)",
    "SELECT SUM(fare_amount + tip_amount) FROM trips WHERE trip_distance > 10 AND passenger_count >= 2",
    "SELECT COUNT(*), SUM(total_amount), MIN(tip_amount), MAX(fare_amount) FROM trips",
    "SELECT COUNT(*), SUM(tip_amount), MAX(total_amount) FROM trips WHERE trip_distance > 40",
    "SELECT COUNT(*), SUM(tip_amount), MAX(total_amount) FROM trips WHERE trip_distance > 8",
    "SELECT COUNT(*), SUM(tip_amount), MAX(total_amount) FROM trips WHERE trip_distance > 1",
    "SELECT COUNT(*), AVG(fare_amount), MIN(dropoff_datetime) FROM trips WHERE pickup_location_id = 256",
    "SELECT payment_type, SUM(fare_amount), AVG(tip_amount), MIN(total_amount) FROM trips "
    "WHERE fare_amount > 5 GROUP BY payment_type",
    "SELECT vendor_id, passenger_count, COUNT(*), SUM(trip_distance) FROM trips "
    "WHERE dropoff_location_id < 100 GROUP BY 1, 2",
    *all_queries().values(),
]


def _dataset(d: Path, rows: int, seed: int, share: float, page: int) -> pa.Table:
    src = d / "src"
    if not src.exists():
        subprocess.run([sys.executable, "-m", "bamql.cli", "gen", "--rows", str(rows), "--out",
                        str(src), "--seed", str(seed), "--williamsburg-share", str(share)],
                       check=True)
    store = d / "data" / "trips"
    if not store.exists():
        subprocess.run([sys.executable, "-m", "bamql.cli", "ingest", *map(str, sorted(src.glob("*.orc"))),
                        "--out", str(store), "--page-size", str(page), "--groups", "auto"],
                       check=True)
    t = pa.concat_tables(paorc.read_table(str(p)) for p in sorted(src.glob("*.orc")))
    return pa.Table.from_arrays(
        [c.cast(pa.timestamp("us")) if pa.types.is_timestamp(c.type) else c for c in t.columns],
        names=t.column_names)


def _same(ours: list[tuple], ref: list[tuple], ordered: bool) -> bool:
    if len(ours) != len(ref):
        return False
    if not ordered:
        key = lambda r: tuple((x is None, str(x)) for x in r)  # noqa: E731
        ours, ref = sorted(ours, key=key), sorted(ref, key=key)
    return all(len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
               for a, b in zip(ours, ref, strict=True))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--share", type=float, default=0.002)
    ap.add_argument("--page-size", type=int, default=512)
    ap.add_argument("--caches", default="16KiB,256KiB,4MiB")
    ap.add_argument("--backends", default="host,file,gpu")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2, help="times each thread runs the list")
    ap.add_argument("--log", type=Path, required=True)
    a = ap.parse_args(argv)
    table = _dataset(a.dir, a.rows, a.seed, a.share, a.page_size)
    con = duckdb.connect()
    con.register("trips", table)
    ref = {q: con.sql(q).fetchall() for q in QUERIES}
    bad = runs = 0
    with a.log.open("w") as log:
        for backend in a.backends.split(","):
            for cache in a.caches.split(","):
                t0 = time.perf_counter()
                results: list[dict] = []
                lock = threading.Lock()
                with bamql.connect(a.dir / "data", device="gpu", backend=backend, cache=cache) as s:

                    def work(k: int, s=s, results=results, lock=lock, backend=backend,
                             cache=cache) -> None:
                        for r in range(a.rounds):
                            order = QUERIES[k % len(QUERIES):] + QUERIES[: k % len(QUERIES)]
                            for q in order:
                                try:
                                    got = s.sql(q).rows()
                                    ok = _same(got, ref[q], "ORDER BY" in q)
                                    rec = {"ok": ok} if ok else {"ok": False, "ours": str(got)[:300],
                                                                 "duckdb": str(ref[q])[:300]}
                                except Exception as e:  # a failure is a finding, not a stop
                                    rec = {"ok": False, "error": f"{type(e).__name__}: {e}"[:300]}
                                with lock:
                                    results.append({"backend": backend, "cache": cache, "thread": k,
                                                    "round": r, "sql": q, **rec})

                    ths = [threading.Thread(target=work, args=(k,)) for k in range(a.threads)]
                    for th in ths:
                        th.start()
                    for th in ths:
                        th.join()
                n_bad = sum(not r["ok"] for r in results)
                for r in results:
                    log.write(json.dumps(r, default=str) + "\n")
                runs += len(results)
                bad += n_bad
                print(f"{backend:5s} cache {cache:>7s}: {len(results)} answers, {n_bad} wrong or "
                      f"failed, {time.perf_counter() - t0:.1f} s", flush=True)
                for r in [r for r in results if not r["ok"]][:3]:
                    print("   ", json.dumps(r, default=str)[:400], flush=True)
        summary = {"summary": True, "rows": a.rows, "queries": len(QUERIES), "answers": runs,
                   "wrong_or_failed": bad, "threads": a.threads, "caches": a.caches,
                   "backends": a.backends, "page_size": a.page_size}
        log.write(json.dumps(summary) + "\n")
    print(json.dumps(summary))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
