"""The disk's own rate for the bytes a cold query reads: bamql's zstd copies of the query's
columns against DuckDB's Parquet column chunks of the same columns, read raw (no engine).

Each query's columns are the store's column names its SQL mentions. bamql's bytes are those
columns' whole compressed copies (what a cold 0.05% plan streams); Parquet's bytes are the
same columns' chunks in every row group (what DuckDB reads where every row group holds a
match). Each configuration drops the OS page cache, then reads the ranges in pieces of
``--read-mb`` on ``--threads`` threads (``os.preadv``, buffered as both engines read), and
reports GB/s. Where an engine's cold query is slower than its raw read of the same bytes,
the difference is the engine's; where the two raw reads differ in rate, the files' layout.

    python bench/diag/disk_rate.py STORE PARQUET_DIR [--queries q01,q06] [--threads 8,32]
        [--read-mb 2,8] [--reps 3] [--out result.json]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from bamql.bench.harness import drop_os_cache
from bamql.queries import load
from bamql.storage.store import PageStore


def bamql_ranges(store: PageStore, cols: list[str]) -> list[tuple[str, int, int]]:
    """(file, offset, length) of each column's whole compressed copy."""
    path = str(store.path / store.manifest.streams.file)
    out = []
    for c in cols:
        _, offs, lens = store.stream_chunks(c)
        out.append((path, int(offs[0]), int(offs[-1] + lens[-1] - offs[0])))
    return out


def parquet_ranges(files: list[str], cols: list[str]) -> list[tuple[str, int, int]]:
    """(file, offset, length) of each column chunk of ``cols`` in every row group."""
    out = []
    for f in files:
        md = pq.ParquetFile(f).metadata
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            for i in range(rg.num_columns):
                cc = rg.column(i)
                if cc.path_in_schema in cols:
                    start = cc.dictionary_page_offset or cc.data_page_offset
                    out.append((f, int(start), int(cc.total_compressed_size)))
    return out


def read_all(ranges: list[tuple[str, int, int]], threads: int, piece: int) -> tuple[float, int]:
    """Seconds to read every range in pieces of ``piece`` bytes on ``threads`` threads."""
    fds = {f: os.open(f, os.O_RDONLY) for f in {r[0] for r in ranges}}
    jobs = [(fds[f], at, min(piece, o + n - at)) for f, o, n in ranges
            for at in range(o, o + n, piece)]
    local = threading.local()

    def one(job: tuple) -> int:
        fd, at, n = job
        if getattr(local, "buf", None) is None:
            local.buf = np.empty(piece, np.uint8)
        return os.preadv(fd, [memoryview(local.buf[:n])], at)

    try:
        t = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            got = sum(pool.map(one, jobs))
        return time.perf_counter() - t, got
    finally:
        for fd in fds.values():
            os.close(fd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store")
    ap.add_argument("parquet")
    ap.add_argument("--queries", default="q01,q06")
    ap.add_argument("--threads", default="8,32")
    ap.add_argument("--read-mb", default="2,8")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if not drop_os_cache():
        raise SystemExit("disk_rate: dropping the OS page cache needs root")
    store = PageStore(Path(a.store) / "trips")
    files = sorted(glob.glob(f"{a.parquet}/*.parquet"))
    out: dict = {"store": a.store, "parquet": a.parquet, "reps": a.reps, "runs": []}
    for q in a.queries.split(","):
        sql = load(q)
        cols = [c for c in store.columns if re.search(rf"\b{c}\b", sql)]
        for who, ranges in (("bamql", bamql_ranges(store, cols)),
                            ("parquet", parquet_ranges(files, cols))):
            for th in (int(x) for x in a.threads.split(",")):
                for mb in (float(x) for x in a.read_mb.split(",")):
                    secs = []
                    for _ in range(a.reps):
                        drop_os_cache()
                        s, n = read_all(ranges, th, int(mb * 2**20))
                        secs.append(s)
                    med = statistics.median(secs)
                    row = {"query": q, "files": who, "columns": cols, "threads": th, "read_mb": mb,
                           "bytes": n, "ranges": len(ranges), "ms": [round(x * 1e3, 1) for x in secs],
                           "median_ms": round(med * 1e3, 1), "gb_per_s": round(n / med / 1e9, 3)}
                    out["runs"].append(row)
                    print(f"{q} {who:8s} {th:3d} threads {mb:4g} MiB reads: {n / 2**20:8.1f} MiB "
                          f"{row['median_ms']:8.1f} ms {row['gb_per_s']:6.3f} GB/s {row['ms']}",
                          flush=True)
    store.close()
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
