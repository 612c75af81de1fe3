"""CPU benchmark: bamql's CPU engine vs whole-column readers, warm, on the same data.

Baselines: ``pyarrow-whole`` (read the needed ORC columns whole with pyarrow, then filter
and aggregate them in DuckDB over Arrow: what a whole-column pipeline does on a CPU) and
``duckdb`` (DuckDB over a zstd Parquet copy of the same rows). Every engine's answer is
checked against DuckDB's before its time counts.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as paorc
import pyarrow.parquet as pq

from bamql.datasets.generator import GenParams
from bamql.datasets.orc import generate_orc
from bamql.engine.session import connect
from bamql.errors import BamqlError
from bamql.planner import ir
from bamql.planner.translate import translate
from bamql.progress import progress_bar
from bamql.queries import TAXI_QUERIES, load
from bamql.storage.ingest import ingest
from bamql.storage.store import PageStore

ENGINES = ("bamql-cpu", "pyarrow-whole", "duckdb")


def machine() -> dict:
    """What the benchmark ran on."""
    mem = None
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        pass
    import duckdb
    import numba

    return {"host": platform.node(), "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(), "memory_bytes": mem, "python": platform.python_version(),
            "pyarrow": pa.__version__, "numba": numba.__version__, "duckdb": duckdb.__version__}


def prepare(workdir: Path, rows: int, share: float, page_sizes) -> tuple[list[Path], Path, dict]:
    """ORC, a Parquet copy and one store per page size (reused when present)."""
    orc = workdir / f"orc-{rows}"
    if not orc.exists():
        with progress_bar("generating", rows) as adv:
            generate_orc(orc, GenParams(rows=rows, seed=1, williamsburg_share=share), progress=adv)
    orcs = sorted(orc.glob("*.orc"))
    parquet = workdir / f"trips-{rows}.parquet"
    if not parquet.exists():
        with pq.ParquetWriter(parquet, paorc.ORCFile(str(orcs[0])).schema, compression="zstd") as w:
            for p in orcs:
                f = paorc.ORCFile(str(p))
                for i in range(f.nstripes):
                    w.write_batch(f.read_stripe(i))
    stores = {}
    for ps in page_sizes:
        d = workdir / f"data-{rows}-{ps}"
        if not (d / "trips").exists():
            with progress_bar(f"ingesting ({ps} B pages)", rows) as adv:
                ingest(orcs, d / "trips", page_size=ps, progress=adv)
        stores[ps] = d
    return orcs, parquet, stores


def _same(x, y) -> bool:
    if isinstance(x, float) or isinstance(y, float):
        if x is None or y is None:
            return x is y
        return x == y or abs(x - y) <= 1e-9 * max(1.0, abs(y)) or (x != x and y != y)
    return x == y


def _close(a: list[tuple], b: list[tuple]) -> bool:
    """Same rows (in any order), floats to 1e-9 relative."""
    key = lambda r: tuple((v is None, str(v)) for v in r)  # noqa: E731
    if len(a) != len(b):
        return False
    return all(len(r1) == len(r2) and all(_same(x, y) for x, y in zip(r1, r2, strict=True))
               for r1, r2 in zip(sorted(a, key=key), sorted(b, key=key), strict=True))


def run(rows: int, workdir: Path, out: Path, queries=TAXI_QUERIES, reps: int = 5,
        page_sizes=(4096, 512), share: float = 0.0005, engines=ENGINES,
        medium: str = "cached") -> dict:
    """Run the benchmark; write ``out`` (JSON) and return the results."""
    import duckdb

    if not engines or not set(engines) & {"bamql-cpu"}:
        raise BamqlError("bench needs the bamql-cpu engine among --engines")
    unknown = set(engines) - set(ENGINES)
    if unknown:
        raise BamqlError(f"unknown engine(s) {sorted(unknown)}; choose from {', '.join(ENGINES)}")
    workdir.mkdir(parents=True, exist_ok=True)
    orcs, parquet, stores = prepare(workdir, rows, share, page_sizes)
    results = {"machine": machine(), "rows": rows, "williamsburg_share": share, "reps": reps,
               "cost_model_medium": medium,
               "mode": "warm (files in the OS page cache)", "runs": []}
    dcon = duckdb.connect()
    for name in queries:
        sql = load(name)
        ref = dcon.sql(sql.replace("FROM trips", f"FROM read_parquet('{parquet}')")).fetchall()
        for ps, data in stores.items():
            with connect(data, device="cpu", medium=medium) as con:
                res = con.sql(sql)  # compiles and warms
                times, st = [], None
                for _ in range(reps):
                    res = con.sql(sql)
                    times.append(res.stats.seconds)
                    st = res.stats
                ok = _close(res.rows(), ref)
                results["runs"].append({
                    "engine": "bamql-cpu", "query": name, "page_size": ps, "ok": ok,
                    "median_s": statistics.median(times), "times_s": times,
                    "compile_s": st.compile_seconds, "bytes_read": st.bytes_read,
                    "whole_column_bytes": st.whole_bytes, "bytes_needed": st.bytes_needed,
                    "amplification": st.amplification, "whole_amplification": st.whole_amplification,
                    "rows_matched": st.rows_matched, "answer": [list(r) for r in res.rows()[:20]],
                })
        with PageStore(stores[page_sizes[0]] / "trips") as store:
            q = translate(sql, {"trips": store.columns})
        needed = sorted({c for e in (q.predicate, *q.keys, *q.aggs) if e is not None
                         for c in ir.columns_of(e)})
        if "pyarrow-whole" in engines:
            times, ans = [], None
            for _ in range(reps + 1):
                t0 = time.perf_counter()
                t = pa.concat_tables(paorc.read_table(str(p), columns=needed) for p in orcs)
                c2 = duckdb.connect()
                c2.register("trips", t)
                ans = c2.sql(sql).fetchall()
                times.append(time.perf_counter() - t0)
            results["runs"].append({
                "engine": "pyarrow-whole", "query": name, "ok": _close(ans, ref),
                "median_s": statistics.median(times[1:]), "times_s": times[1:],
                "bytes_decoded": t.nbytes, "orc_bytes": sum(p.stat().st_size for p in orcs),
                "answer": [list(r) for r in ans[:20]]})
        if "duckdb" in engines:
            times = []
            qp = sql.replace("FROM trips", f"FROM read_parquet('{parquet}')")
            for _ in range(reps + 1):
                t0 = time.perf_counter()
                ans = dcon.sql(qp).fetchall()
                times.append(time.perf_counter() - t0)
            results["runs"].append({"engine": "duckdb", "query": name, "ok": _close(ans, ref),
                                    "median_s": statistics.median(times[1:]), "times_s": times[1:],
                                    "answer": [list(r) for r in ans[:20]]})
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=1, default=str))
    tmp.rename(out)
    return results


def _mib(r: dict, key: str) -> str:
    return f"{r[key] / 2**20:>9.1f}" if key in r else f"{'':>9}"


def summary(results: dict) -> str:
    """A text table of the results: time per engine, bytes and amplification."""
    lines = [f"{results['rows']:,} rows, {results['mode']}, median of {results['reps']}",
             f"{'query':<6} {'engine':<22} {'ms':>9} {'read MiB':>9} {'whole MiB':>10} {'ampl.':>7} "
             f"{'whole ampl.':>11} ok"]
    for r in results["runs"]:
        eng = r["engine"] + (f" ({r['page_size']} B)" if "page_size" in r else "")
        amp = f"{r['amplification']:>6.2f}x" if "amplification" in r else f"{'':>7}"
        wamp = f"{r['whole_amplification']:>10.2f}x" if "whole_amplification" in r else f"{'':>11}"
        lines.append(f"{r['query']:<6} {eng:<22} {r['median_s'] * 1e3:>9.1f} {_mib(r, 'bytes_read')} "
                     f"{_mib(r, 'whole_column_bytes'):>10} {amp} {wamp} {'yes' if r['ok'] else 'NO'}")
    return "\n".join(lines)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--workdir", default="/tmp/bamql-bench")
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--medium", default="cached", help="cost model: cached (warm) or file (cold disk)")
    a = ap.parse_args()
    res = run(a.rows, Path(a.workdir), Path(a.out), reps=a.reps, medium=a.medium)
    print(summary(res))
    if not all(r["ok"] for r in res["runs"]):
        raise SystemExit("some answers disagree with DuckDB")
