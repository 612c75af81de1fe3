"""Cold Q1-Q6 of the GPU file backend (nvCOMP) for several read-thread counts and read sizes.

Where the time of a cold query goes, and how many reads in flight the disk wants: each
configuration is a fresh connection with ``gpu.backends.STREAM_THREADS`` and
``gpu.inflate.READ_BYTES`` set; the OS page cache is dropped and the GPU cache emptied
before every run; the compressed read's phases (disk reads and checks, the copy to the
GPU, the decode, the page checks) are timed by wrapping the inflater. DuckDB over the
same rows as Parquet runs cold in the same process, alternating with bamql.

    python bench/diag/stream_io.py STORE PARQUET_DIR [--threads 8,16,32] [--read-mb 2,8]
        [--queries q01,q04,q06] [--reps 3] [--out result.json]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import bamql
from bamql.bench.harness import drop_os_cache
from bamql.gpu import backends, inflate
from bamql.queries import load

PHASES: dict[str, float] = {}


def _wrap() -> None:
    """Time the decode (and unshuffle) and the page checks of every inflater read (they synchronize)."""
    from numba import cuda

    orig_read, orig_verify = inflate.GpuInflater.read, inflate.GpuInflater._verify
    orig_all = inflate.GpuInflater._decode
    orig_decode = inflate.NvcompDecoder.decode

    def read(self, *a, **k):
        t = time.perf_counter()
        try:
            return orig_read(self, *a, **k)
        finally:
            PHASES["inflate"] = PHASES.get("inflate", 0.0) + time.perf_counter() - t

    def decode(self, *a, **k):
        cuda.synchronize()
        t = time.perf_counter()
        orig_decode(self, *a, **k)
        cuda.synchronize()
        PHASES["decode"] = PHASES.get("decode", 0.0) + time.perf_counter() - t

    def verify(self, *a, **k):
        t = time.perf_counter()
        orig_verify(self, *a, **k)
        PHASES["verify"] = PHASES.get("verify", 0.0) + time.perf_counter() - t

    def decode_all(self, *a, **k):  # the decode and, for shuffled copies, the unshuffle
        cuda.synchronize()
        t = time.perf_counter()
        orig_all(self, *a, **k)
        cuda.synchronize()
        PHASES["decode+unshuffle"] = PHASES.get("decode+unshuffle", 0.0) + time.perf_counter() - t

    inflate.GpuInflater.read, inflate.GpuInflater._verify = read, verify
    inflate.GpuInflater._decode = decode_all
    inflate.NvcompDecoder.decode = decode


def same(a: list[tuple], b: list[tuple]) -> bool:
    return len(a) == len(b) and all(
        len(x) == len(y) and all(math.isclose(float(u), float(v), rel_tol=1e-9)
                                 for u, v in zip(x, y, strict=True))
        for x, y in zip(a, b, strict=True))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("parquet")
    ap.add_argument("--threads", default="8,16,32")
    ap.add_argument("--read-mb", default="2,8")
    ap.add_argument("--queries", default="q01,q04,q06")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import duckdb

    _wrap()
    qs = a.queries.split(",")
    dk = duckdb.connect()
    dk.execute(f"CREATE VIEW trips AS SELECT * FROM read_parquet('{a.parquet}/*.parquet')")
    out: dict = {"store": a.store, "reps": a.reps, "runs": []}
    for q in qs:  # compile every kernel once, outside the timings
        with bamql.connect(a.store, device="gpu", backend="file") as con:
            con.sql(load(q))
    for th in (int(x) for x in a.threads.split(",")):
        for mb in (float(x) for x in a.read_mb.split(",")):
            backends.STREAM_THREADS, inflate.READ_BYTES = th, int(mb * 2**20)
            con = bamql.connect(a.store, device="gpu", backend="file")
            for q in qs:
                sql = load(q)
                ts, ds, ph = [], [], []
                for _ in range(a.reps):
                    con.gpu.clear_cache()
                    drop_os_cache()
                    PHASES.clear()
                    t = time.perf_counter()
                    r = con.sql(sql)
                    ts.append(time.perf_counter() - t)
                    ph.append(dict(PHASES))
                    drop_os_cache()
                    t = time.perf_counter()
                    d = dk.execute(sql).fetchall()
                    ds.append(time.perf_counter() - t)
                row = {"threads": th, "read_mb": mb, "query": q,
                       "bamql_ms": [round(x * 1e3, 1) for x in ts],
                       "duckdb_ms": [round(x * 1e3, 1) for x in ds],
                       "phases_ms": [{k: round(v * 1e3, 1) for k, v in p.items()} for p in ph],
                       "bytes_read": r.stats.bytes_read,
                       "same": same(r.fetchall(), d)}
                out["runs"].append(row)
                print(th, mb, q, "bamql", statistics.median(ts) * 1e3, "duckdb",
                      statistics.median(ds) * 1e3, ph[-1], flush=True)
            con.close()
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
