"""GPU benchmark: bamql's GPU engine (host and gpu backends) vs RAPIDS cuDF, same process,
same data. Run on a GPU machine: ``python -m bamql.bench.gpu --rows 50000000 --out r.json``.

RAPIDS does what its users write: ``cudf.read_orc(files, columns=needed)``, filter, mean.
``warm``: files in the OS page cache, bamql's GPU cache and resident columns emptied before
every run (every needed byte crosses PCIe again); ``hot``: bamql's cache kept. Answers are
checked against each other before times count.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from bamql.bench.cpu import machine
from bamql.datasets.generator import GenParams
from bamql.datasets.orc import generate_orc
from bamql.engine.session import connect
from bamql.planner import ir
from bamql.planner.translate import translate
from bamql.queries import TAXI_QUERIES, load
from bamql.storage.ingest import ingest


def h2d_bandwidth() -> float:
    """Pinned host -> GPU copy bandwidth (bytes/s), median of 5 copies of 1 GiB."""
    from numba import cuda

    n = 1 << 30
    h = cuda.pinned_array(n, np.uint8)
    h[:] = 1
    d = cuda.device_array(n, np.uint8)
    ts = []
    for _ in range(5):
        cuda.synchronize()
        t0 = time.perf_counter()
        d.copy_to_device(h)
        cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return n / statistics.median(ts)


def rapids_query(cudf, files, sql: str, q: ir.Query):
    """Q1-Q6 the RAPIDS way: read the needed columns whole, filter, mean."""
    needed = sorted({c for e in (q.predicate, *q.aggs) for c in ir.columns_of(e)})
    df = cudf.read_orc([str(f) for f in files], columns=needed)
    pred = q.predicate
    assert isinstance(pred, ir.InList)
    sel = df[df[pred.arg.name].isin([v.value for v in pred.values])]
    return [float(sel[a.arg.name].mean()) for a in q.aggs]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=50_000_000)
    ap.add_argument("--workdir", default="/tmp/bamql-gpu-bench")
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--page-size", type=int, default=4096)
    a = ap.parse_args()
    work = Path(a.workdir)
    orc = work / "orc"
    t0 = time.perf_counter()
    if not orc.exists():
        generate_orc(orc, GenParams(rows=a.rows, seed=1, williamsburg_share=0.0005), files=8)
    files = sorted(orc.glob("*.orc"))
    gen_s = time.perf_counter() - t0
    data = work / f"data-{a.page_size}"
    t0 = time.perf_counter()
    if not data.exists():
        ingest(files, data / "trips", page_size=a.page_size)
    ingest_s = time.perf_counter() - t0
    print(f"data ready: gen {gen_s:.0f} s, ingest {ingest_s:.0f} s", flush=True)
    res = {"machine": machine(), "rows": a.rows, "page_size": a.page_size, "reps": a.reps,
           "orc_bytes": sum(f.stat().st_size for f in files), "runs": []}
    from numba import cuda

    res["gpu"] = cuda.get_current_device().name.decode() if isinstance(
        cuda.get_current_device().name, bytes) else cuda.get_current_device().name
    bw = h2d_bandwidth()
    res["h2d_bytes_per_s"] = bw
    print(f"H2D {bw / 1e9:.1f} GB/s", flush=True)
    answers = {}
    try:
        import cudf
    except ImportError:
        cudf = None
        print("rapids: cudf is not installed; skipped")
    for backend in ("host", "gpu"):
        with connect(data, device="gpu", backend=backend) as con:
            for name in TAXI_QUERIES:
                sql = load(name)
                con.sql(sql)  # compile, load the table
                for mode in ("warm", "hot"):
                    times, st = [], None
                    for _ in range(a.reps):
                        if mode == "warm":
                            con.gpu.clear_cache()
                        r = con.sql(sql)
                        st = r.stats
                        times.append(st.seconds)
                    answers.setdefault(name, r.rows()[0])
                    ok = np.allclose(r.rows()[0], answers[name], rtol=1e-9)
                    res["runs"].append({
                        "engine": f"bamql-gpu-{backend}", "query": name, "mode": mode, "ok": bool(ok),
                        "median_s": statistics.median(times), "times_s": times,
                        "bytes_read": st.bytes_read, "whole_column_bytes": st.whole_bytes,
                        "bytes_needed": st.bytes_needed, "amplification": st.amplification,
                        "pcie_floor_s": st.bytes_read / bw, "rows_matched": st.rows_matched,
                        "compile_s": st.compile_seconds, "answer": list(r.rows()[0])})
                    print(f"{name} {backend:<4} {mode:<4} {statistics.median(times) * 1e3:8.2f} ms "
                          f"read {st.bytes_read / 2**20:8.1f} MiB floor {st.bytes_read / bw * 1e3:6.2f} ms",
                          flush=True)
    if cudf is not None:
        with connect(data, device="cpu") as con:
            cat = {"trips": con.store("trips").columns}
        for name in TAXI_QUERIES:
            q = translate(load(name), cat)
            rapids_query(cudf, files, load(name), q)  # warm the files and cuDF
            times = []
            for _ in range(a.reps):
                t0 = time.perf_counter()
                ans = rapids_query(cudf, files, load(name), q)
                times.append(time.perf_counter() - t0)
            ok = np.allclose(ans, answers[name], rtol=1e-9)
            res["runs"].append({"engine": "rapids", "query": name, "mode": "warm", "ok": bool(ok),
                                "median_s": statistics.median(times), "times_s": times,
                                "answer": ans})
            print(f"{name} rapids warm {statistics.median(times) * 1e3:8.2f} ms ok={ok}", flush=True)
    Path(a.out).write_text(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()
