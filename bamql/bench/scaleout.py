"""Scale-out benchmark: the same partitioned table on 1, 2, ... GPUs (one Dask worker each).

For every GPU count it starts a local cluster with one worker per GPU, warms it (every
partition loaded onto its worker, kernels compiled), then times each query ``reps`` times
from the client, wall clock, with every worker's GPU page cache emptied before each run
(``warm``: all the bytes a query needs cross PCIe again). Answers are checked against
DuckDB on a Parquet copy of the same rows. The speed-up of ``n`` GPUs is the median time
on the first count divided by the median time on ``n``.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bamql.bench.harness import drop_os_cache, generate, machine, prepare, same_rows
from bamql.config import Compression, Config, DaskDispatch
from bamql.errors import BamqlError
from bamql.progress import ingest_progress
from bamql.queries import load
from bamql.storage.ingest import ingest


def query_columns(queries: Sequence[str]) -> list[str]:
    """The trips' columns the named queries read, in first-use order (an output name that
    a GROUP BY or ORDER BY repeats, such as t3's ``year``, is no column)."""
    import sqlglot
    from sqlglot import exp

    from bamql.datasets.schema import TAXI_SCHEMA

    out: dict[str, None] = {}
    for q in queries:
        for c in sqlglot.parse_one(load(q)).find_all(exp.Column):
            if c.name in TAXI_SCHEMA.names:
                out.setdefault(c.name, None)
    return list(out)


def prepare_partitions(workdir: Path, rows: int, share: float, page_size: int,
                       parts: int, columns: Sequence[str] | None = None,
                       say: Callable[[str], None] | None = None,
                       compress: Compression = Compression.NONE) -> tuple[str, Path]:
    """The generated trips as Parquet (DuckDB's copy) and as a partitioned store, each
    reused when there; returns ``(Parquet glob, store directory)``.

    Where ``bamql bench`` already generated these rows as ORC, the store is ingested from
    the ORC as there. Otherwise no ORC is made: the rows are generated straight into
    Parquet, which is written and ingested about twice as fast, so larger tables fit a GPU
    machine's time. With ``columns`` the store, and Parquet generated here, hold only those
    (their directories say which): preparing is bound by its writes, and the six queries'
    columns are about a third of the table (docs/measurements.md#two-gpus-h200-2-host-backend-warm).
    ``compress`` ``zstd`` writes each column's compressed copy beside its pages (cold reads
    of whole columns read it instead; the directory's name says so).
    ``say`` is told how long generating and ingesting took, each, and the whole."""
    t_all = time.perf_counter()
    base = workdir / f"r{rows}-s{share:g}"
    tag = "" if columns is None else "-" + hashlib.sha1(",".join(columns).encode()).hexdigest()[:8]
    if (base / "orc").exists():
        data = prepare(workdir, rows, share, [], parquet_copy=True)
        sources, parquet = data.orc, str(data.parquet)
    else:
        pq_dir = base / f"parquet{tag}"  # only the columns too: less to write
        if not pq_dir.exists():
            # a file per core, not the bench's 16 for RAPIDS's ORC: every core generates
            t0 = time.perf_counter()
            generate(pq_dir, rows, share, fmt="parquet", columns=columns, max_files=64)
            if say:
                say(f"generated {rows:,} rows as Parquet in {time.perf_counter() - t0:.1f} s")
        sources, parquet = sorted(pq_dir.glob("*.parquet")), str(pq_dir / "*.parquet")
    zst = "" if compress == Compression.NONE else f"-{compress}"
    d = base / f"parts-{page_size}-{parts}{tag}{zst}"
    if not (d / "trips").exists():
        with ingest_progress(f"ingesting {parts} partitions ({page_size} B pages)", rows) as bars:
            rep = ingest(sources, d / "trips", page_size=page_size, partitions=parts,
                         columns=columns, compress=compress, **bars)
        if say:
            say(f"ingested {parts} partitions in {rep.seconds:.1f} s")
    if say:
        say(f"{rows:,} rows in {parts} partitions ready in {time.perf_counter() - t_all:.1f} s ({d})")
    return parquet, d


def run_scaleout(rows: int, gpus: Sequence[int], queries: Sequence[str], reps: int = 5,
                 partitions: int | None = None, backend: str = "host", page_size: int = 512,
                 share: float = 0.0005, workdir: Path = Path("bamql-bench-data"),
                 out: Path | None = None, say: Callable[[str], None] = print,
                 device: str = "gpu", cluster: str | None = None, all_columns: bool = False,
                 interleave: bool = False, prepare_only: bool = False,
                 plots: bool = True, baselines: Sequence[str] = (),
                 dispatch: str = "actor", mode: str = "warm",
                 compress: Compression | str = Compression.NONE) -> dict:
    """Run the scale-out benchmark; returns (and with ``out`` writes) the JSON document,
    and with ``plots`` a PNG of the times and speed-ups beside it (``<out>-time.png``,
    listed under ``"plots"``).

    ``device="cpu"`` runs the same workers on the CPU engine (for machines without GPUs).
    With ``cluster`` (a scheduler address) it runs once on that cluster's workers as they
    are, instead of starting a local cluster per GPU count; ``workdir`` must then be on a
    file system the workers see at the same path. The partitions hold only the columns the
    queries use unless ``all_columns``. ``dispatch`` is how queries reach the workers
    (``config.DaskDispatch``: ``actor`` or ``task``).

    ``mode`` ``warm`` times queries over tables in memory (the GPU page caches emptied
    before each run); ``cold`` drops the OS page cache before every timed run of every
    engine (root only), so that each run reads its pages from the disk: the GPU's ``file``
    backend or the CPU engine, DuckDB over the Parquet copy, dask-cudf reading the Parquet
    copy and querying it (the table in ``workdir``, on a disk, not in ``/dev/shm``).
    ``compress`` ``zstd`` prepares the partitions with compressed copies of their columns.

    ``baselines`` times the peers on the same rows: ``dask-cudf`` on each GPU count's
    workers (the Parquet copy's columns read into GPU memory first, untimed: its best case;
    not with ``interleave``), ``duckdb`` on the machine's cores over the Parquet copy. Their
    runs carry ``"engine"``; bamql's speed-ups compare bamql's runs only.

    With ``interleave`` every GPU count's local cluster is up at once and the counts take
    turns, repetition by repetition (in alternating order), so that a machine whose speed
    drifts over minutes weighs on every count alike; each count then holds its own copy of
    the store in host memory, and its caches on the GPUs the counts share.

    ``prepare_only`` prepares the table (``partitions`` of them, by default the most GPUs)
    and returns ``{"prepared": its directory}``, timing nothing: a later run reuses it, so a
    table too big to prepare and time in one sitting can be done in two.
    """
    columns = None if all_columns else query_columns(queries)
    compress = Compression(compress)
    if mode not in ("warm", "cold"):
        raise BamqlError(f"mode takes warm or cold, not {mode!r}")
    if mode == "cold" and not prepare_only:
        if device == "gpu" and backend != "file":
            raise BamqlError(f"a cold run reads the disk: the GPU's file backend, not {backend}")
        if not drop_os_cache():
            raise BamqlError("a cold run drops the OS page cache before every query, which "
                             "needs root here")
    if prepare_only:
        _, d = prepare_partitions(workdir, rows, share, page_size, partitions or max(gpus),
                                  columns, say, compress)
        return {"prepared": str(d)}
    import contextlib

    import distributed
    import duckdb

    from bamql.exec.distributed import connect_cluster, local_gpu_cluster

    client = connect_cluster(cluster) if cluster is not None else None
    with client if client is not None else contextlib.nullcontext():  # closed however it ends
        if client is not None:
            gpus = (len(client.scheduler_info().get("workers", {})),)
            if gpus[0] < 1:
                raise BamqlError(f"the Dask cluster at {cluster!r} has no workers")
        parts = partitions or max(gpus)
        parquet, d = prepare_partitions(workdir, rows, share, page_size, parts, columns, say,
                                        compress)
        duck = duckdb.connect()
        duck.execute("SET error_on_division_by_zero=false")
        t0 = time.perf_counter()
        want = {q: duck.sql(_duck_sql(q, parquet)).fetchall() for q in queries}
        say(f"DuckDB's answers (the reference) in {time.perf_counter() - t0:.1f} s")
        res = {"machine": machine(), "config": {"rows": rows, "gpus": list(gpus), "partitions": parts,
                                                "device": device, "backend": backend, "page_size": page_size,
                                                "share": share, "reps": reps, "mode": mode,
                                                "cluster": cluster or "local",
                                                "columns": columns or "all",
                                                "interleave": bool(interleave and client is None),
                                                "dispatch": str(DaskDispatch(dispatch)),
                                                "compress": str(compress)},
               "runs": []}
        if "dask-cudf" in baselines and (client is not None or interleave):
            say("dask-cudf skipped: it runs on the local clusters started one GPU count at a "
                "time (not with --cluster or --interleave)")
        if client is not None:  # the cluster as it is: one count, its workers
            say(f"{gpus[0]} worker(s) of {cluster}: loading {parts} partitions")
            with _session(client, d, device, backend, dispatch) as con:
                _warm(con, gpus[0], queries, say)
                _time_queries({gpus[0]: (client, con)}, queries, reps, want, res, say, mode)
        elif interleave:
            with contextlib.ExitStack() as stack:
                counts = {}
                for n in gpus:
                    say(f"{n} GPU(s): starting {n} worker(s), loading {parts} partitions")
                    local = stack.enter_context(local_gpu_cluster(n))
                    c = stack.enter_context(distributed.Client(local, direct_to_workers=True))
                    c.wait_for_workers(n, timeout=120)
                    counts[n] = (c, stack.enter_context(_session(c, d, device, backend, dispatch)))
                    _warm(counts[n][1], n, queries, say)
                _time_queries(counts, queries, reps, want, res, say, mode)
        else:
            for n in gpus:
                say(f"{n} GPU(s): starting {n} worker(s), loading {parts} partitions")
                with local_gpu_cluster(n) as local, \
                        distributed.Client(local, direct_to_workers=True) as c:
                    c.wait_for_workers(n, timeout=120)
                    with _session(c, d, device, backend, dispatch) as con:
                        _warm(con, n, queries, say)
                        _time_queries({n: (c, con)}, queries, reps, want, res, say, mode)
                    if "dask-cudf" in baselines:
                        try:
                            _time_dask_cudf(n, parquet, d, queries, reps, want, res, say, mode)
                        except Exception as e:  # the baseline broke: bamql's runs still count
                            say(f"dask-cudf on {n} GPU(s) stopped: {type(e).__name__}: "
                                f"{str(e).splitlines()[:1]}")
        if "duckdb" in baselines:
            _time_duckdb(duck, parquet, queries, reps, want, res, say, mode)
    base = {r["query"]: r["median_s"] for r in res["runs"]
            if r["gpus"] == gpus[0] and r.get("engine", "bamql") == "bamql"}
    for r in res["runs"]:
        if r.get("engine", "bamql") == "bamql":
            r["speedup"] = base[r["query"]] / r["median_s"]
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".json.tmp")  # no half-written JSON if this process dies
        tmp.write_text(json.dumps(res, indent=1))
        tmp.rename(out.with_suffix(".json"))
        if plots:
            try:
                from bamql.bench.plots import plot_scaleout
            except ImportError:
                say("plots skipped: matplotlib is not installed (pip install 'bamql[bench]')")
            else:
                res["plots"] = [str(plot_scaleout(res, out.with_name(out.name + "-time.png")))]
    return res


def _time_dask_cudf(n: int, parquet: str, d: Path, queries: Sequence[str], reps: int, want: dict,
                    res: dict, say: Callable[[str], None], mode: str = "warm") -> None:
    """dask-cudf on ``n`` GPUs' workers (the client in use): warm, each query's columns read
    into GPU memory once (untimed), then the query timed ``reps`` times; cold, each timed
    run reads the columns from the Parquet copy after the OS page cache is dropped."""
    try:
        import dask_cudf  # noqa: F401
    except ImportError as e:
        say(f"dask-cudf skipped: it is not usable here ({type(e).__name__})")
        return
    from bamql.bench import daskcudf
    from bamql.bench.engines import needed_columns
    from bamql.sql.translate import translate

    cat = _catalog(d)
    for qn in queries:
        ddf = None
        try:
            q = translate(load(qn), cat)
            ddf = daskcudf.read_resident(parquet, needed_columns(q))
            daskcudf.run_query(ddf, q)  # warm: dask's graph code, cuDF's kernels
        except (BamqlError, NotImplementedError) as e:
            say(f"dask-cudf skips {qn}: {e}")
            del ddf  # its columns leave the GPUs before the next query's arrive
            continue
        except Exception as e:  # a baseline that breaks must not sink the run
            say(f"dask-cudf failed on {qn}: {type(e).__name__}: {str(e).splitlines()[:1]}")
            del ddf
            continue
        times, got = [], None
        try:
            for _ in range(reps):
                if mode == "cold":
                    del ddf  # the GPUs' copy goes: each run reads the files
                    ddf = None
                    drop_os_cache()
                t0 = time.perf_counter()
                if mode == "cold":
                    ddf = daskcudf.read_resident(parquet, needed_columns(q))
                got = daskcudf.run_query(ddf, q)
                times.append(time.perf_counter() - t0)
        except Exception as e:  # out of GPU memory, say: the run goes on without it
            say(f"dask-cudf failed on {qn}: {type(e).__name__}: {str(e).splitlines()[:1]}")
            del ddf
            continue
        del ddf
        ok = same_rows(got, want[qn])
        res["runs"].append({"engine": "dask-cudf", "gpus": n, "query": qn, "mode": mode,
                            "median_s": statistics.median(times), "times_s": times, "ok": ok,
                            **_rows_apart(ok, got, want[qn])})
        say(f"dask-cudf {n} GPU(s) {qn}: {statistics.median(times) * 1e3:.1f} ms"
            + ("" if ok else "  WRONG ANSWER"))


def _time_duckdb(duck, parquet: str, queries: Sequence[str], reps: int, want: dict, res: dict,
                 say: Callable[[str], None], mode: str = "warm") -> None:
    """DuckDB over the Parquet copy with the machine's cores, each query ``reps`` times
    after one untimed run (cold: each after the OS page cache is dropped)."""
    for qn in queries:
        sql = _duck_sql(qn, parquet)
        duck.sql(sql).fetchall()
        times = []
        for _ in range(reps):
            if mode == "cold":
                drop_os_cache()
            t0 = time.perf_counter()
            got = duck.sql(sql).fetchall()
            times.append(time.perf_counter() - t0)
        ok = same_rows(got, want[qn])
        res["runs"].append({"engine": "duckdb", "gpus": 0, "query": qn, "mode": mode,
                            "median_s": statistics.median(times), "times_s": times, "ok": ok,
                            **_rows_apart(ok, got, want[qn])})
        say(f"duckdb {qn}: {statistics.median(times) * 1e3:.1f} ms" + ("" if ok else "  WRONG ANSWER"))


def _rows_apart(ok: bool, got: list, want: list, most: int = 20) -> dict:
    """A wrong answer's first rows beside the reference's (as text), for the JSON: what
    differed can be read after the machine is gone."""
    if ok:
        return {}
    return {"got": [[str(v) for v in r] for r in got[:most]],
            "want": [[str(v) for v in r] for r in want[:most]]}


def _duck_sql(qn: str, parquet: str) -> str:
    """Query ``qn`` over the Parquet copy, as DuckDB reads it."""
    return load(qn).replace("FROM trips", f"FROM read_parquet('{parquet}')")


def _catalog(d: Path) -> dict:
    """The stored trips' columns, as the translator takes them."""
    from bamql.storage.partitioned import open_table

    with open_table(d / "trips") as t:
        return {"trips": t.columns}


def _session(client, d: Path, device: str, backend: str, dispatch: str):
    from bamql.api.session import Session

    return Session(d, config=Config.from_env(
        device=device, backend=backend if device == "gpu" else None, cluster=client,
        dask_dispatch=dispatch))


def _warm(con, n: int, queries: Sequence[str], say: Callable[[str], None]) -> None:
    """Run each query once: loads every partition on its worker, compiles every kernel."""
    t0 = time.perf_counter()
    for q in queries:
        con.sql(load(q))
    say(f"{n} GPU(s): warmed up in {time.perf_counter() - t0:.1f} s")


def _time_queries(counts: dict, queries: Sequence[str], reps: int, want: dict, res: dict,
                  say: Callable[[str], None], mode: str = "warm") -> None:
    """Time each query ``reps`` times on each GPU count's ``(client, session)``, the counts
    taking turns in each repetition (first to last, then last to first); the GPU page
    caches emptied before each run, and cold the OS page cache dropped too."""
    from bamql.exec.dask_worker import clear_caches

    order = list(counts)
    for q in queries:
        sql = load(q)
        times: dict[int, list[float]] = {n: [] for n in order}
        last: dict = {}
        for rep in range(reps):
            for n in order if rep % 2 == 0 else order[::-1]:
                client, con = counts[n]
                client.run(clear_caches)
                if mode == "cold":
                    drop_os_cache()
                t0 = time.perf_counter()
                last[n] = con.sql(sql)
                times[n].append(time.perf_counter() - t0)
        for n in order:
            st = last[n].stats
            ok = same_rows(last[n].rows(), want[q])
            # where the wall time went (last run): each partition's engine time and its whole
            # call on the worker, and the client's wait for the workers (Dask round trips);
            # the rest is the client's parsing, planning and merging
            res["runs"].append({"gpus": n, "query": q, "mode": mode,
                                "median_s": statistics.median(times[n]),
                                "times_s": times[n], "bytes_read": st.bytes_read,
                                "partition_seconds": st.partition_seconds,
                                "partition_wall_seconds": st.partition_wall_seconds,
                                "dispatch_seconds": st.dispatch_seconds,
                                "worker_seconds": st.worker_seconds,
                                "partition_kernel_seconds": st.partition_kernel_seconds,
                                "partition_gpu_seconds": st.partition_gpu_seconds,
                                "worker_spans": st.worker_spans,
                                "answers_seconds": st.answers_seconds,
                                "rows_matched": st.rows_matched, "ok": ok,
                                **_rows_apart(ok, last[n].rows(), want[q])})
            say(f"{n} GPU(s) {q}: {statistics.median(times[n]) * 1e3:.1f} ms"
                + ("" if ok else "  WRONG ANSWER"))


def _busiest(seconds: list[float], workers: int) -> float:
    """The most time one worker spent. Partition ``i`` runs on worker ``i mod workers``, and
    the statistics come back worker by worker, each worker's in its partitions' order
    (``exec.distributed.DaskRunner.run``)."""
    sizes = [len(range(w, len(seconds), workers)) for w in range(workers)]
    starts = [sum(sizes[:w]) for w in range(workers)]
    return max(sum(seconds[a : a + k]) for a, k in zip(starts, sizes, strict=True))


def summary(res: dict) -> str:
    """A text table: query x GPU count, median ms and speed-up."""
    gpus = res["config"]["gpus"]
    ours = [r for r in res["runs"] if r.get("engine", "bamql") == "bamql"]
    lines = ["query  " + "".join(f"{n} GPU(s)".rjust(22) for n in gpus)]
    for q in dict.fromkeys(r["query"] for r in ours):
        cells = []
        for n in gpus:
            r = next(r for r in ours if r["query"] == q and r["gpus"] == n)
            mark = "" if r["ok"] else "!"
            cells.append(f"{r['median_s'] * 1e3:9.1f} ms {r['speedup']:5.2f}x{mark}".rjust(22))
        lines.append(f"{q:<7}" + "".join(cells))
    lines += ["", "where the time went (last run, ms): kernels on the device (CUDA events), kernels "
              "from launch to results, engines and partition calls on the busiest worker, the "
              "longest worker call (all its partitions), the client's wait for the workers, the "
              "whole query; the last call's start after the client's send and the last answer's "
              "arrival after the calls ended (one machine's clock)",
              f"{'query':<7}{'GPUs':>5}{'device':>9}{'kernels':>9}{'engines':>9}{'calls':>9}"
              f"{'worker':>9}{'dispatch':>9}{'query':>9}{'to':>7}{'back':>7}"]
    peers = [r for r in res["runs"] if r.get("engine", "bamql") != "bamql"]
    if peers:
        lines += ["", "the peers on the same rows (median ms; ! a wrong answer)"]
        for r in peers:
            where = f"{r['gpus']} GPU(s)" if r["gpus"] else "CPU"
            lines.append(f"{r['query']:<7}{r['engine']:<11}{where:>9}{r['median_s'] * 1e3:>11.1f}"
                         + ("" if r["ok"] else " !"))
    nan = float("nan")
    for r in ours:
        if "partition_wall_seconds" not in r:
            continue
        n, spans = r["gpus"], r.get("worker_spans") or [(nan, nan)]
        kern, dev = r.get("partition_kernel_seconds"), r.get("partition_gpu_seconds")
        lines.append(f"{r['query']:<7}{n:>5}{(_busiest(dev, n) if dev else nan) * 1e3:>9.1f}"
                     f"{(_busiest(kern, n) if kern else nan) * 1e3:>9.1f}"
                     f"{_busiest(r['partition_seconds'], n) * 1e3:>9.1f}"
                     f"{_busiest(r['partition_wall_seconds'], n) * 1e3:>9.1f}"
                     f"{max(r.get('worker_seconds') or [nan]) * 1e3:>9.1f}"
                     f"{r['dispatch_seconds'] * 1e3:>9.1f}{r['times_s'][-1] * 1e3:>9.1f}"
                     f"{max(a for a, _ in spans) * 1e3:>7.2f}"
                     f"{(r.get('answers_seconds', nan) - max(b for _, b in spans)) * 1e3:>7.2f}")
    return "\n".join(lines)


def check(res: dict) -> None:
    """Raise when any answer was wrong."""
    bad = [r for r in res["runs"] if not r["ok"] and r.get("engine", "bamql") == "bamql"]
    if bad:
        raise BamqlError(f"{len(bad)} scale-out run(s) disagree with DuckDB, first "
                         f"{bad[0]['query']} on {bad[0]['gpus']} GPU(s)")
