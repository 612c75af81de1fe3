"""``bamql bench``: the same queries through bamql and its baselines, on the same data.

Per run it records engine, query, mode, page size, time, bytes read from the medium, the
bytes a whole-column reader moves, bytes needed, and the answer, checked against the
reference engine (DuckDB when present) before its time counts. Modes: ``warm`` (files in
the OS page cache; bamql's GPU cache emptied before each run), ``hot`` (bamql's GPU cache
kept), ``cold`` (the OS page cache dropped before every run of every engine; needs root,
otherwise skipped with a notice). JIT compilation is warmed up and reported apart.
"""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import statistics
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.orc as paorc
import pyarrow.parquet as pq

from bamql.bench.engines import Data, all_engines
from bamql.bench.minimum import matching_rows, page_minimum
from bamql.config import ClusterOrder, Compression, FloatEncoding
from bamql.datasets.generator import GenParams
from bamql.datasets.orc import generate_orc
from bamql.errors import BamqlError
from bamql.fused import ir
from bamql.progress import ingest_progress, progress_bar
from bamql.queries import TAXI_QUERIES, load
from bamql.sql.translate import translate
from bamql.storage.cluster import Clustering, arrow_values, check_keys, describe, zorder_permutation
from bamql.storage.format import FORMAT_VERSION, MANIFEST, PAGES_META
from bamql.storage.ingest import ingest
from bamql.storage.packing import column_sizes
from bamql.storage.store import PageStore
from bamql.storage.valuesets import wanted

MODES = ("warm", "hot", "cold")


@dataclass(frozen=True)
class BenchConfig:
    """What to run."""

    rows: int = 2_000_000
    queries: tuple[str, ...] = TAXI_QUERIES
    engines: tuple[str, ...] = ("bamql-cpu", "bamql-gpu-host", "rapids", "rapids-stripes", "duckdb")
    modes: tuple[str, ...] = ("warm",)
    reps: int = 5
    page_sizes: tuple[int, ...] = (4096,)
    shares: tuple[float, ...] = (0.0005,)
    workdir: Path = Path("bamql-bench-data")
    out: Path = Path("bench/results/latest")
    plots: bool = True
    groups: str = "auto"  # row groups of the stores (storage.groups): auto or none
    floats: FloatEncoding = FloatEncoding.AUTO  # decimal floats as scaled integers: auto or plain
    compress: Compression = Compression.NONE  # compressed stream copies (storage.streams)
    #: clustering keys of the stores (storage.cluster) and of duckdb-sorted's Parquet copy
    cluster_by: tuple[str, ...] = ()
    #: how ``cluster_by`` orders rows (``config.ClusterOrder``): sort or zorder
    cluster_order: ClusterOrder = ClusterOrder.SORT
    #: bit-packed stores (storage.packing; ``bamql ingest --pack``)
    pack: bool = False


def machine() -> dict:
    """What the benchmark ran on: host, CPU, memory, GPU and library versions."""
    info = {"host": platform.node(), "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(), "python": platform.python_version()}
    try:
        info["memory_bytes"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        pass
    for mod in ("pyarrow", "numba", "duckdb", "cudf", "sqlglot"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception:
            pass
    from bamql.api.session import gpu_unavailable_reason

    if gpu_unavailable_reason() is None:
        from numba import cuda

        name = cuda.get_current_device().name
        info["gpu"] = name.decode() if isinstance(name, bytes) else name
    return info


def h2d_bandwidth() -> float:
    """Pinned host -> GPU copy bandwidth (bytes/s): median of 5 copies of 1 GiB."""
    import time

    from numba import cuda

    n = 1 << 30
    h = cuda.pinned_array(n, "u1")
    h[:] = 1
    d = cuda.device_array(n, "u1")
    ts = []
    for _ in range(5):
        cuda.synchronize()
        t0 = time.perf_counter()
        d.copy_to_device(h)
        cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return n / statistics.median(ts)


def _stale(store: Path, compress: Compression = Compression.NONE, cluster_by: tuple[str, ...] = (),
           pack: bool = False, cluster_order: ClusterOrder = ClusterOrder.SORT) -> bool:
    """A store written by an older format or bamql (no page value sets), or without the
    compressed copy, the clustering or the packing asked for (re-ingested rather than
    measured as current)."""
    try:
        m = json.loads((store / MANIFEST).read_text())
        with np.load(store / PAGES_META) as z:
            keys = set(z.files)
    except (OSError, ValueError):
        return True
    small = [c["name"] for c in m.get("columns", []) if c.get("kind") in ("int", "string")
             and wanted(c.get("min"), c.get("max"), c.get("scale"), m.get("page_size", 0))]
    return (m.get("format_version") != FORMAT_VERSION
            or (m.get("streams") is not None) != (compress == Compression.ZSTD)
            or tuple(m.get("cluster_by", ())) != tuple(cluster_by)
            or m.get("cluster_order", "sort") != cluster_order
            or bool(m.get("pack", False)) != pack
            or bool(small) and not any(k.startswith("vset:") for k in keys))


def _orc_to_parquet(src: Path, dst: Path) -> None:
    f = paorc.ORCFile(str(src))
    with pq.ParquetWriter(dst, f.schema, compression="zstd") as w:
        for i in range(f.nstripes):
            w.write_batch(f.read_stripe(i))


def sorted_parquet(src: str, dst: Path, keys: Sequence[str],
                   order: ClusterOrder = ClusterOrder.SORT) -> None:
    """The rows of the Parquet files ``src`` (a glob) in the order of ``bamql ingest
    --cluster-by`` over ``keys`` (sorted ascending, NULLs last; or the Z-order of one
    store, computed by the same function as at ingest), written as one zstd Parquet file
    ``dst`` with row groups of as many rows as the first of ``src``'s (so that DuckDB's
    row-group statistics prune at the same grain as over the unsorted copy)."""
    import glob

    import duckdb

    files = sorted(glob.glob(src))
    first = pq.ParquetFile(files[0]).metadata
    rg = max(first.row_group(0).num_rows if first.num_row_groups else 1, 1)
    tmp = dst.with_name(f".{dst.name}.tmp")
    tmp.unlink(missing_ok=True)
    if ClusterOrder(order) is ClusterOrder.ZORDER and len(keys) > 1:
        import pyarrow as pa

        # the files in the order the stores ingest their ORC twins, rows in the store's order
        t = pa.concat_tables(pq.read_table(f) for f in files)
        t = t.take(zorder_permutation([arrow_values(t.column(k)) for k in keys]))
        pq.write_table(t, tmp, row_group_size=rg, compression="zstd")
        tmp.rename(dst)
        return
    order_by = ", ".join(f'"{k}" ASC NULLS LAST' for k in keys)
    con = duckdb.connect()
    try:
        con.execute(f"SET temp_directory = '{dst.parent / '.duckdb-tmp'}'")
        con.execute(f"COPY (SELECT * FROM read_parquet('{src}') ORDER BY {order_by}) TO '{tmp}' "
                    f"(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {rg})")
    finally:
        con.close()
    tmp.rename(dst)


def generate(out: Path, rows: int, share: float, fmt: str = "orc",
             columns: Sequence[str] | None = None, max_files: int = 16) -> None:
    """The benchmark's trips (seed 1, ``share`` in Williamsburg) as ORC or Parquet files in
    ``out``, one per 4 M rows up to ``max_files`` (at most one per core; each is written by
    a process of its own), with a progress bar; only ``columns`` when given."""
    files = max(1, min(os.cpu_count() or 1, max_files, rows // (1 << 22)))
    with progress_bar(f"generating {rows:,} rows ({fmt})", rows) as adv:
        generate_orc(out, GenParams(rows=rows, seed=1, williamsburg_share=share), files=files,
                     progress=adv, fmt=fmt, columns=columns)


def prepare(workdir: Path, rows: int, share: float, page_sizes: Sequence[int],
            parquet_copy: bool = True, groups: str = "auto",
            floats: FloatEncoding = FloatEncoding.AUTO, compress: Compression = Compression.NONE,
            cluster_by: Sequence[str] = (),
            sorted_copy: bool = False, pack: bool = False,
            cluster_order: ClusterOrder = ClusterOrder.SORT) -> Data:
    """ORC, a Parquet copy (for DuckDB), a copy ordered by ``cluster_by`` in
    ``cluster_order`` (``sorted_copy``, for duckdb-sorted) and a store per page size,
    clustered so when given
    (each reused when there and current; stores with row groups, plain floats, clustering or
    packing are kept apart from the others)."""
    cluster_by = tuple(cluster_by)
    zsuffix = "-zorder" if cluster_order == ClusterOrder.ZORDER and cluster_by else ""
    base = workdir / f"r{rows}-s{share:g}"
    orc = base / "orc"
    if not orc.exists():
        generate(orc, rows, share)
    orcs = sorted(orc.glob("*.orc"))
    if cluster_by:  # an unknown key fails before any copy is made
        check_keys(cluster_by, paorc.ORCFile(str(orcs[0])).schema.names)
    pq_dir = base / "parquet"  # one zstd Parquet file per ORC file, written in parallel
    if (parquet_copy or sorted_copy) and not pq_dir.exists():
        from concurrent.futures import ThreadPoolExecutor

        tmp = base / ".parquet.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        with progress_bar("copying to Parquet (for DuckDB)", len(orcs)) as adv, \
                ThreadPoolExecutor(min(len(orcs), os.cpu_count() or 1)) as ex:
            # Arrow reads ORC and encodes Parquet outside the GIL: threads are enough
            for _ in ex.map(lambda p: _orc_to_parquet(p, tmp / f"{p.stem}.parquet"), orcs):
                adv(1)
        tmp.rename(pq_dir)
    parquet = pq_dir / "*.parquet"  # a glob, as DuckDB's read_parquet takes it
    sorted_pq = None
    if sorted_copy:
        if not cluster_by:
            raise BamqlError("duckdb-sorted needs --cluster-by (the keys its copy is sorted by)")
        sorted_pq = base / (f"parquet-sorted-{'-'.join(cluster_by)}" + zsuffix) / "trips.parquet"
        if not sorted_pq.exists():
            sorted_pq.parent.mkdir(parents=True, exist_ok=True)
            with progress_bar(f"ordering a Parquet copy by {describe(cluster_by, cluster_order)}",
                              1) as adv:
                sorted_parquet(str(parquet), sorted_pq, cluster_by, cluster_order)
                adv(1)
    stores = {}
    for ps in page_sizes:
        d = base / (f"data-{ps}" + ("" if groups in (None, "none") else f"-g{groups}")
                    + ("-fplain" if floats == FloatEncoding.PLAIN else "")
                    + ("-zstd" if compress == Compression.ZSTD else "")
                    + (f"-c{'-'.join(cluster_by)}{zsuffix}" if cluster_by else "")
                    + ("-packed" if pack else ""))
        if (d / "trips").exists() and _stale(d / "trips", compress, cluster_by, pack,
                                             cluster_order):
            shutil.rmtree(d / "trips")
        if not (d / "trips").exists():
            with ingest_progress(f"ingesting ({ps} B pages)", rows) as bars:
                ingest(orcs, d / "trips", page_size=ps, **bars, groups=groups,
                       floats=floats, compress=compress,
                       cluster_by=Clustering(cluster_by, ClusterOrder(cluster_order)),
                       pack=pack)
        stores[ps] = d
    return Data(rows, share, orcs, parquet, stores, sorted_pq)


def drop_os_cache() -> bool:
    """Drop the OS page cache (root only). False if not allowed here."""
    try:
        subprocess.run(["sync"], check=False)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def same_value(a, b) -> bool:
    """Equal, NULL to NULL, NaN to NaN, floats to 1e-9 relative."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def same_rows(x: list[tuple], y: list[tuple]) -> bool:
    """Same rows in any order, floats to 1e-9."""
    key = lambda r: tuple((v is None, str(v)) for v in r)  # noqa: E731
    if len(x) != len(y):
        return False
    return all(len(r1) == len(r2) and all(same_value(a, b) for a, b in zip(r1, r2, strict=True))
               for r1, r2 in zip(sorted(x, key=key), sorted(y, key=key), strict=True))


def run(cfg: BenchConfig, say: Callable[[str], None] = print) -> dict:
    """Run the benchmark; write ``<out>.json`` (and plots); return the results."""
    engines = all_engines()
    unknown = [e for e in cfg.engines if e not in engines]
    if unknown:
        raise BamqlError(f"unknown engine(s) {unknown}; choose from {', '.join(engines)}")
    if "duckdb-sorted" in cfg.engines and not cfg.cluster_by:
        raise BamqlError("engine duckdb-sorted needs --cluster-by (the keys its copy is sorted by)")
    bad_modes = [m for m in cfg.modes if m not in MODES]
    if bad_modes:
        raise BamqlError(f"unknown mode(s) {bad_modes}; choose from {', '.join(MODES)}")
    active = []
    for name in cfg.engines:
        why = engines[name].unavailable()
        if why:
            say(f"skipping {name}: {why}")
        else:
            active.append(engines[name])
    if not active:
        raise BamqlError("no engine can run here")
    cold_ok = "cold" not in cfg.modes or drop_os_cache()
    if not cold_ok:
        say("cold mode skipped: dropping the OS page cache needs root")
    info = machine()
    if any(e.name.startswith("bamql-gpu") for e in active):
        info["h2d_bytes_per_s"] = h2d_bandwidth()  # for each run's PCIe floor
    res = {"machine": info, "config": {
        "rows": cfg.rows, "queries": list(cfg.queries), "engines": [e.name for e in active],
        "modes": list(cfg.modes), "reps": cfg.reps, "page_sizes": list(cfg.page_sizes),
        "shares": list(cfg.shares), "cold": cold_ok, "groups": cfg.groups,
        "floats": cfg.floats, "compress": cfg.compress, "cluster_by": list(cfg.cluster_by),
        "cluster_order": str(cfg.cluster_order), "pack": cfg.pack},
        "runs": [], "errors": []}
    steps = len(cfg.shares) * len(cfg.queries) * sum(
        len(cfg.page_sizes) if e.name.startswith("bamql") else 1 for e in active)
    # data first: its own progress bars cannot nest inside the benchmark's
    datas = {share: prepare(cfg.workdir, cfg.rows, share, cfg.page_sizes,
                            parquet_copy=any(e.name == "duckdb" for e in active), groups=cfg.groups,
                            floats=cfg.floats, compress=cfg.compress, cluster_by=cfg.cluster_by,
                            sorted_copy=any(e.name == "duckdb-sorted" for e in active),
                            pack=cfg.pack, cluster_order=cfg.cluster_order)
             for share in cfg.shares}
    found: dict[tuple, np.ndarray | None] = {}  # (share, predicate) -> matching rows (ORC)

    def record(eng, qn, q, mode, ps, share, data, ps_cols, times, r) -> None:
        run = {"engine": eng.name, "query": qn, "mode": mode, "page_size": ps, "share": share,
               "median_s": statistics.median(times), "times_s": times,
               "bytes_read": r.bytes_read, "whole_bytes": r.whole_bytes,
               "bytes_needed": r.bytes_needed, "rows": [list(x) for x in r.rows[:20]], **r.extra}
        if info.get("h2d_bytes_per_s") and r.bytes_read is not None:
            run["pcie_floor_s"] = r.bytes_read / info["h2d_bytes_per_s"]
        # the page minimum counts pages by the ORC's row order, which a clustered store lacks
        # (a query of rows, not groups, has no page minimum: it reads what its top-k needs)
        if eng.name.startswith("bamql") and r.bytes_read is not None and not cfg.cluster_by \
                and isinstance(q, ir.Query):
            key = (share, repr(q.predicate))
            if key not in found:
                found[key] = matching_rows(q, data.orc, ps_cols)
            m = page_minimum(q, found[key], data.rows, ps_cols, ps)
            if m:
                run["page_min_bytes"] = m
                run["page_amplification"] = r.bytes_read / m
        res["runs"].append(run)

    full_ref: dict[tuple[str, float], list[tuple]] = {}  # (query, share) -> DuckDB's rows
    with progress_bar("benchmarking", steps) as advance:
        for share, data in datas.items():
            with PageStore(data.stores[cfg.page_sizes[0]] / "trips") as s:
                cat = {"trips": s.columns}
                # what was measured: each column's storage type (scaled floats marked)
                res["config"]["storage"] = {
                    n: c.dtype + (f"/1e{c.scale}" if c.scale else "") for n, c in s.columns.items()}
            for ps in cfg.page_sizes:
                with PageStore(data.stores[ps] / "trips") as s:
                    ps_cols = s.columns
                    # each column's bytes as plain pages and as stored (bit-packed or not)
                    res["config"].setdefault("columns", {})[str(ps)] = [
                        {"column": z.name, "dtype": z.dtype, "bits": z.bits,
                         "plain_bytes": z.plain_bytes, "stored_bytes": z.stored_bytes,
                         "ratio": round(z.ratio, 3)} for z in column_sizes(s.manifest)]
                # page size matters to bamql only
                group = [e for e in active if ps == cfg.page_sizes[0] or e.name.startswith("bamql")]
                opened: list = []
                try:
                    for eng in group:
                        eng.open(data, ps)
                        opened.append(eng)
                    for qn in cfg.queries:
                        sql = load(qn)
                        try:
                            q = translate(sql, cat)
                        except BamqlError:  # runs through the plan tree: no single IR
                            q = None
                        ready = []
                        for eng in group:
                            advance(1)
                            try:
                                eng.run(sql, q, cfg.modes[0])  # warm up JIT and files
                            except NotImplementedError as e:
                                say(f"{eng.name} skips {qn}: {e}")
                                continue
                            except Exception as e:  # a baseline that breaks must not sink the run
                                msg = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                                say(f"{eng.name} failed on {qn}: {msg}")
                                res["errors"].append({"engine": eng.name, "query": qn, "error": msg})
                                continue
                            ready.append(eng)
                        for mode in cfg.modes:
                            if mode == "cold" and not cold_ok:
                                continue
                            runs = [e for e in ready if mode in e.modes]
                            if mode == "cold":  # an untimed cold run first: a cold plan
                                for eng in runs:  # (disk paths) compiles its own kernels
                                    drop_os_cache()
                                    eng.run(sql, q, mode)
                            times: dict[str, list[float]] = {e.name: [] for e in runs}
                            last: dict = {}
                            # engines take turns within each repetition, so that a drifting
                            # machine (a virtual disk's cold reads) weighs on every engine alike
                            for _ in range(cfg.reps):
                                for eng in runs:
                                    if mode == "cold":
                                        drop_os_cache()
                                    last[eng.name] = eng.run(sql, q, mode)
                                    times[eng.name].append(last[eng.name].seconds)
                            for eng in runs:
                                record(eng, qn, q, mode, ps, share, data, ps_cols,
                                       times[eng.name], last[eng.name])
                            # whole answers against the reference's (the JSON keeps 20 rows)
                            for ref_name in ("duckdb", "duckdb-sorted"):
                                if ref_name in last and (qn, share) not in full_ref:
                                    full_ref[(qn, share)] = last[ref_name].rows
                            ref_rows = full_ref.get((qn, share))
                            if ref_rows is not None:
                                for run_rec, eng in zip(res["runs"][-len(runs):], runs, strict=True):
                                    run_rec["ok_full"] = same_rows(last[eng.name].rows, ref_rows)
                finally:
                    for eng in opened:
                        eng.close()
    check(res)
    out = Path(cfg.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(res, indent=1, default=str))
    tmp.rename(out.with_suffix(".json"))
    if cfg.plots:
        try:
            from bamql.bench.plots import plot_all
        except ImportError:
            say("plots skipped: matplotlib is not installed (pip install 'bamql[bench]')")
        else:
            res["plots"] = [str(p) for p in plot_all(res, out)]
    return res


def check(res: dict) -> None:
    """Mark each run ``ok`` if its answer matches the reference engine's (DuckDB if run):
    the whole answer where the run compared it (``ok_full``), else the rows kept."""
    for r in res["runs"]:
        if "ok_full" in r:
            r["ok"] = r["ok_full"]
            continue
        peers = [x for x in res["runs"] if x["query"] == r["query"] and x["share"] == r["share"]]
        ref = next((x for x in peers if x["engine"] == "duckdb"),
                   next((x for x in peers if x["engine"] == "duckdb-sorted"), peers[0]))
        r["ok"] = same_rows([tuple(x) for x in r["rows"]], [tuple(x) for x in ref["rows"]])


def _mib(r: dict, key: str) -> str:
    return f"{r[key] / 2**20:>9.1f}" if r.get(key) is not None else f"{'':>9}"


def summary(res: dict) -> str:
    """A text table: one line per engine, query, mode and page size."""
    c = res["config"]
    lines = [f"{c['rows']:,} rows; medians of {c['reps']}; {res['machine'].get('gpu', 'no GPU')}",
             f"{'query':<6} {'engine':<16} {'mode':<5} {'page':>6} {'share':>8} {'ms':>9} "
             f"{'read MiB':>9} {'whole MiB':>10} {'ampl.':>7} {'vs page min':>11} ok"]
    for r in res["runs"]:
        amp = f"{r['amplification']:>6.2f}x" if r.get("amplification") is not None else f"{'':>7}"
        page = str(r["page_size"]) if r["engine"].startswith("bamql") else ""
        pmin = (f"{r['page_amplification']:>10.2f}x" if r.get("page_amplification") is not None
                else f"{'':>11}")
        lines.append(f"{r['query']:<6} {r['engine']:<16} {r['mode']:<5} {page:>6} {r['share']:>8.4%} "
                     f"{r['median_s'] * 1e3:>9.2f} {_mib(r, 'bytes_read')} "
                     f"{_mib(r, 'whole_bytes'):>10} {amp} {pmin} {'yes' if r['ok'] else 'NO'}")
    return "\n".join(lines)
