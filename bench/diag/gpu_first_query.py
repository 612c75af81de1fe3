"""How long a one-shot ``bamql sql --device gpu`` takes in a new process, with the query's
GPU kernel compiled (a cold kernel directory) and loaded from disk (warm: what the first
run left there), and a query that differs only in its constants on the warm directory,
with the process's peak resident memory.

Each run is a new process, timed from start to exit; it also reports the query's own
compile time (``--timer`` is not needed: the stats come from a child that prints them).
Writes JSON (``--out``, default ``bench/results/<gpu>-gpu-first-query.json``) with the
machine, the build and every run. Usage:
``python bench/diag/gpu_first_query.py [--rows 2000000 | --data DIR] [--reps 3] [--backend host]
[--out F]`` (``--data``: an existing store's directory, e.g. the bench's, instead of a new
table).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SQL = ("SELECT payment_type, COUNT(*), AVG(fare_amount), SUM(tip_amount) FROM trips "
       "WHERE trip_distance > {d} AND pickup_location_id IN ({a}, {b}) GROUP BY 1")
_STATS = """
import json, sys, bamql
from bamql.gpu import kernel as kgpu
with bamql.connect(sys.argv[1], device="gpu", backend=sys.argv[3]) as con:
    st = con.sql(sys.argv[2]).stats
print(json.dumps({"compile_s": st.compile_seconds, "disk_hits": kgpu.disk_cache_hits()}))
"""


def _table(d: Path, rows: int) -> Path:
    from bamql.datasets.generator import GenParams
    from bamql.datasets.orc import generate_orc
    from bamql.storage.ingest import ingest

    r = generate_orc(d / "orc", GenParams(rows=rows, seed=5), workers=1)
    ingest(r.files, d / "data" / "trips", page_size=4096)
    return d / "data"


def _shot(env: dict, data: Path, sql: str, backend: str) -> dict:
    """A one-shot ``bamql sql --device gpu``'s seconds from start to exit, and its peak
    resident memory (MiB)."""
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "bamql.cli", "sql", str(data), sql, "--device",
                          "gpu", "--backend", backend], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    err = p.stderr.read().decode() if p.stderr else ""
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise SystemExit(f"bamql sql failed ({p.returncode}): {err.strip()}")
    return {"wall_s": wall, "max_rss_mib": usage.ru_maxrss / 1024}


def _stats(env: dict, data: Path, sql: str, backend: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _STATS, str(data), sql, backend], env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    from bamql.bench.harness import machine

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--data", type=Path, help="an existing store's directory (no new table)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--backend", default="host", choices=["host", "gpu", "file"])
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    info = machine()
    build = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True).stdout.strip()
    first, other = SQL.format(d=3, a=236, b=161), SQL.format(d=7, a=48, b=79)
    runs: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        data = a.data if a.data is not None else _table(d, a.rows)
        for i in range(a.reps):
            # one kernel directory per repetition: cold, then warm, then other constants
            env = dict(os.environ, BAMQL_CACHE_DIR=str(d / f"cache-{i}"))
            for state, sql in (("cold", first), ("warm", first), ("warm, other constants", other)):
                runs.append({"state": state, "rep": i, **_shot(env, data, sql, a.backend)})
            # the same three states again, with the query's own compile time and disk hits
            env = dict(os.environ, BAMQL_CACHE_DIR=str(d / f"stats-{i}"))
            for state, sql in (("cold", first), ("warm", first), ("warm, other constants", other)):
                runs.append({"state": state, "rep": i, **_stats(env, data, sql, a.backend)})
    summary = {}
    for state in ("cold", "warm", "warm, other constants"):
        walls = [r["wall_s"] for r in runs if r["state"] == state and "wall_s" in r]
        comp = [r["compile_s"] for r in runs if r["state"] == state and "compile_s" in r]
        rss = [r["max_rss_mib"] for r in runs if r["state"] == state and "max_rss_mib" in r]
        summary[state] = {"wall_s_median": statistics.median(walls),
                          "compile_s_median": statistics.median(comp),
                          "max_rss_mib_max": max(rss)}
        print(f"{state:<22} one-shot bamql sql {summary[state]['wall_s_median']:.2f} s, "
              f"peak RSS {summary[state]['max_rss_mib_max']:.0f} MiB, "
              f"compile {summary[state]['compile_s_median']:.3f} s "
              f"(medians of {a.reps} processes)", flush=True)
    res = {"machine": info, "build": build,
           "config": {"rows": a.rows, "data": str(a.data or ""), "reps": a.reps,
           "backend": a.backend, "query": first, "other": other}, "summary": summary,
           "runs": runs}
    gpu = str(info.get("gpu", "nogpu")).split()[-1].lower()
    out = a.out or Path(__file__).resolve().parents[1] / "results" / f"{gpu}-gpu-first-query.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
