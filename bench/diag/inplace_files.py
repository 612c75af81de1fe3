"""Q1-Q6 over Parquet files read in place (``FROM 'dir/*.parquet'``) against DuckDB over the
same files, and the whole-file cache path's first query (``cache_files=True``).

Not a timed test: a measurement, written as JSON under ``bench/results/vm/``. For each
file set (the 20 M-row generated Parquet in ``/work/benchwork``, unsorted and sorted by
``pickup_location_id``) it runs, each in a new process:

- bamql in place: Q1..Q6 in order, each query's first run (its read in place) and a
  warm repeat (the session keeps the store of its read: the same query over unchanged
  files reads nothing);
- DuckDB: Q1..Q6 over ``read_parquet``, a first and a warm run in the same process;
- once, on the unsorted set: bamql's old path, Q1's first query ingesting the whole files
  into a fresh cache directory (``cache_files=True``), then Q1 warm.

The OS page cache cannot be dropped on this machine (no root): every "first" run reads the
files from memory if an earlier run touched them, so these are first-query times, not cold
ones. Usage: ``python bench/diag/inplace_files.py [--data DIR] [--out FILE] [--device cpu,gpu]``
(``--device gpu``: bamql's GPU engine over the rows read in place).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = Path("/work/benchwork/r20000000-s0.0005")
QUERIES = [f"q{i:02d}" for i in range(1, 7)]

_CHILD = r"""
import json, sys, time
from pathlib import Path
mode, src, cache, device = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[5]
from bamql.queries import load as load_query
sqls = [load_query(q).replace("FROM trips", f"FROM '{src}'") for q in json.loads(sys.argv[4])]
out = []
if mode == "duckdb":
    import duckdb
    con = duckdb.connect()
    for sql in sqls:
        sql = sql.replace(f"'{src}'", f"read_parquet('{src}')")
        t0 = time.perf_counter(); con.sql(sql).fetchall(); first = time.perf_counter() - t0
        t0 = time.perf_counter(); con.sql(sql).fetchall(); warm = time.perf_counter() - t0
        out.append({"first_s": first, "warm_s": warm})
else:
    from bamql.config import Config
    from bamql.api.session import Session
    s = Session(config=Config(device=device, file_cache=Path(cache), cache_files=mode == "cache"))
    for sql in sqls:
        t0 = time.perf_counter(); r = s.sql(sql); first = time.perf_counter() - t0
        t0 = time.perf_counter(); s.sql(sql); warm = time.perf_counter() - t0
        out.append({"first_s": first, "warm_s": warm,
                    "explain": s.explain(sql).splitlines()[0]})
    s.close()
print(json.dumps(out))
"""


def _run(mode: str, src: str, queries: list[str], cache: Path, device: str = "cpu") -> list[dict]:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", _CHILD, mode, src, str(cache), json.dumps(queries),
                        device],
                       capture_output=True, text=True, cwd=REPO, check=True)
    rows = json.loads(p.stdout.strip().splitlines()[-1])
    print(f"{mode} {src}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return [{"query": q, **r} for q, r in zip(queries, rows, strict=True)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "vm" /
                    "cpu-vm-20M-inplace-files.json")
    ap.add_argument("--device", default="cpu", help="bamql's device for the in-place runs "
                    "(cpu, gpu or 'cpu,gpu' for both)")
    a = ap.parse_args(argv)
    from bamql.bench.harness import machine

    result: dict = {"machine": machine(), "data": str(a.data), "note": (
        "first = a query's first run in its process (bamql in place: its read of the "
        "files); warm = the same query again (bamql: the store its read made is kept). "
        "The OS page cache could not be dropped: first runs read files from memory.")}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("parquet", "parquet-sorted-pickup_location_id"):
            src = str(a.data / name / "*.parquet")
            result[name] = {"duckdb": _run("duckdb", src, QUERIES, Path(tmp) / "unused")}
            for dev in a.device.split(","):
                key = "bamql_in_place" if dev == "cpu" else f"bamql_in_place_{dev}"
                result[name][key] = _run("inplace", src, QUERIES, Path(tmp) / f"c-{name}-{dev}",
                                         dev)
        result["parquet"]["bamql_cache_files"] = _run(
            "cache", str(a.data / "parquet" / "*.parquet"), QUERIES[:1], Path(tmp) / "cache")
    a.out.write_text(json.dumps(result, indent=1) + "\n")
    print(a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
