"""The benchmark commands: ``bench`` (engines side by side on one GPU or the CPU) and
``bench-scaleout`` (1, 2, ... GPUs through Dask)."""

from __future__ import annotations

import argparse
import sys

from bamql.cli.args import COMPRESS, FLOATS, size, split
from bamql.config import Compression, FloatEncoding
from bamql.errors import BamqlError


def _bench_data_args(p: argparse.ArgumentParser, out: str, out_help: str) -> None:
    """The options both bench commands share: data size, queries, where data and results go."""
    p.add_argument("--rows", type=int, default=2_000_000, help="trips (default 2,000,000)")
    p.add_argument("--queries", default="q01,q02,q03,q04,q05,q06", help="comma-separated query names")
    p.add_argument("--workdir", default="bamql-bench-data", help="where data is generated and reused")
    p.add_argument("--out", default=out, help=out_help)


def _query_names(text: str) -> tuple[str, ...]:
    """``q01,q06`` -> names, every one a known query (else a one-line error)."""
    from bamql.queries import names

    queries = split(text)
    unknown = [q for q in queries if q not in names()]
    if unknown or not queries:
        raise BamqlError(f"unknown queries {unknown or text!r}; known: {', '.join(names())}")
    return queries


def cmd_bench(a: argparse.Namespace) -> int:
    from pathlib import Path

    from bamql.bench.harness import BenchConfig, run, summary
    from bamql.storage.cluster import parse_cluster_by

    queries = _query_names(a.queries)
    try:
        shares = tuple(float(x) for x in split(a.selectivity))
    except ValueError:
        raise BamqlError(f"--selectivity takes numbers such as 0.0005,0.01, not {a.selectivity!r}") from None
    if any(not 0 <= s <= 1 for s in shares):
        raise BamqlError("--selectivity values must be within 0..1")
    clustering = parse_cluster_by(a.cluster_by or None)
    cfg = BenchConfig(rows=a.rows, queries=queries, engines=split(a.engines), modes=split(a.modes),
                      reps=a.reps, page_sizes=tuple(size(x) for x in split(a.page_sizes)),
                      shares=shares, workdir=Path(a.workdir), out=Path(a.out), plots=not a.no_plots,
                      groups=a.groups, floats=FloatEncoding(a.floats),
                      compress=Compression(a.compress),
                      cluster_by=clustering.keys, cluster_order=clustering.order, pack=a.pack)
    res = run(cfg, say=lambda m: print(f"bamql: {m}", file=sys.stderr))
    print(summary(res))
    print(f"results: {cfg.out}.json" + "".join(f", {p}" for p in res.get("plots", [])))
    bad = [r for r in res["runs"] if not r["ok"]]
    if bad:
        first = f"{bad[0]['engine']} {bad[0]['query']}"
        raise BamqlError(f"{len(bad)} run(s) disagree with the reference, first {first}")
    return 0


#: the peers ``bamql bench-scaleout --baselines`` can time beside bamql
SCALEOUT_BASELINES = ("dask-cudf", "duckdb")


def _baselines(text: str) -> tuple[str, ...]:
    names = tuple(x for x in text.split(",") if x) if text != "none" else ()
    bad = [x for x in names if x not in SCALEOUT_BASELINES]
    if bad:
        raise BamqlError(f"--baselines takes {', '.join(SCALEOUT_BASELINES)} or none, not "
                         f"{', '.join(map(repr, bad))}")
    return names


def cmd_bench_scaleout(a: argparse.Namespace) -> int:
    from pathlib import Path

    from bamql.bench.scaleout import check, run_scaleout, summary

    queries = _query_names(a.queries)
    try:
        gpus = tuple(int(x) for x in a.gpus.split(","))
    except ValueError:
        gpus = ()
    if not gpus or min(gpus) < 1:
        raise BamqlError(f"--gpus takes counts of at least 1 such as 1,2, not {a.gpus!r}")
    if a.interleave and a.cluster:
        raise BamqlError("--interleave starts a local cluster per GPU count; it does not combine "
                         "with --cluster, which runs once on that cluster's workers")
    res = run_scaleout(a.rows, gpus, queries, reps=a.reps, partitions=a.partitions,
                       backend=a.backend, page_size=size(a.page_size), workdir=Path(a.workdir),
                       out=Path(a.out), say=lambda m: print(f"bamql: {m}", file=sys.stderr),
                       device=a.device, cluster=a.cluster, all_columns=a.all_columns,
                       interleave=a.interleave, prepare_only=a.prepare_only,
                       plots=not a.no_plots, baselines=_baselines(a.baselines),
                       dispatch=a.dispatch, mode=a.mode, compress=a.compress)
    if a.prepare_only:
        print(f"prepared: {res['prepared']}")
        return 0
    print(summary(res))
    print(f"results: {a.out}.json" + "".join(f", {p}" for p in res.get("plots", [])))
    check(res)
    return 0


def add_bench_commands(sub) -> None:
    """Register bench and bench-scaleout on the CLI's subparsers."""
    b = sub.add_parser("bench", help="benchmark bamql against RAPIDS, DuckDB and whole-column readers",
                       description="Run the same queries through each engine in one process on the "
                       "same generated data, check every answer against DuckDB, and write JSON and "
                       "PNG plots. The engines take turns within each repetition, so a machine whose "
                       "speed drifts (a virtual disk's cold reads) weighs on all of them alike. "
                       "Engines whose packages are missing are skipped with a notice.")
    _bench_data_args(b, "bench/results/latest", "output path stem (.json, -*.png)")
    b.add_argument("--engines",
                   default="bamql-cpu,bamql-gpu-host,bamql-gpu-gpu,rapids,rapids-stripes,duckdb",
                   help="comma-separated: bamql-cpu, bamql-gpu-host, bamql-gpu-gpu, bamql-gpu-file, "
                   "bamql-gpu-file-gather, bamql-gpu-file-queue, rapids, rapids-stripes, duckdb, "
                   "duckdb-sorted (needs --cluster-by), pyarrow-whole")
    b.add_argument("--modes", default="warm",
                   help="comma-separated: warm, hot, cold (cold drops the OS page cache before "
                   "every run, so it needs root; an untimed cold round of every engine comes first)")
    b.add_argument("--reps", type=int, default=5, help="timed repetitions, median reported")
    b.add_argument("--page-sizes", default="4096", help="store page sizes, e.g. 512,4096,65536 (a sweep)")
    b.add_argument("--selectivity", default="0.0005",
                   help="Williamsburg shares, e.g. 0.00001,0.0005,0.01,0.1,1 (a sweep)")
    b.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    b.add_argument("--groups", default="auto", choices=["auto", "none"],
                   help="row groups in the stores (default auto; see bamql ingest --groups)")
    b.add_argument("--floats", default=FloatEncoding.AUTO.value, choices=FLOATS,
                   help="decimal floats as scaled integers in the stores (default auto; see "
                   "bamql ingest --floats)")
    b.add_argument("--compress", default=Compression.NONE.value, choices=COMPRESS,
                   help="compressed stream copies in the stores (default none; see bamql ingest "
                   "--compress)")
    b.add_argument("--cluster-by", default=None, metavar="A,B",
                   help="cluster the stores by these columns (see bamql ingest --cluster-by) and "
                   "order duckdb-sorted's Parquet copy the same way, e.g. pickup_location_id or "
                   "zorder(pickup_location_id,pickup_datetime)")
    b.add_argument("--pack", action="store_true",
                   help="bit-pack the stores' integer-stored columns (see bamql ingest --pack)")
    b.set_defaults(func=cmd_bench)
    so = sub.add_parser("bench-scaleout", help="benchmark a partitioned table on 1, 2, ... GPUs (Dask)",
                        description="Ingest the generated trips as partitions, then for each GPU "
                        "count start one Dask worker per GPU and time the queries warm (GPU caches "
                        "emptied before each run), checking every answer against DuckDB.")
    _bench_data_args(so, "bench/results/scaleout", "output path stem (.json, -time.png)")
    so.add_argument("--gpus", default="1,2", help="GPU counts to compare (default 1,2)")
    so.add_argument("--partitions", type=int, default=None, help="partitions (default: the most GPUs)")
    so.add_argument("--backend", default="host", choices=["host", "file", "gpu"], help="GPU backend")
    so.add_argument("--device", default="gpu", choices=["gpu", "cpu"],
                    help="gpu (one worker per GPU), or cpu (the same workers, CPU engine)")
    so.add_argument("--reps", type=int, default=5, help="timed repetitions, median reported")
    so.add_argument("--page-size", default="512", help="store page size (default 512)")
    so.add_argument("--all-columns", action="store_true",
                    help="ingest every column of the trips, not only those the queries use (the "
                    "engines' work is the same; the table takes ~3x the space)")
    so.add_argument("--cluster", default=None, metavar="ADDRESS",
                    help="run once on this Dask scheduler's workers as they are, instead of "
                    "local clusters per GPU count (--workdir must be on a file system the "
                    "workers see at the same path)")
    so.add_argument("--interleave", action="store_true",
                    help="start every GPU count's workers at once and let the counts take turns "
                    "in each repetition, so that drift in the machine's speed weighs on all "
                    "alike (each count holds its own copy of the store in host memory, which "
                    "slows the kernels of large tables: time those without it)")
    so.add_argument("--prepare-only", action="store_true",
                    help="generate and ingest the table into --workdir, then stop; a later run "
                    "with the same --rows, --partitions and --page-size reuses it (a table too "
                    "big to prepare and time in one sitting)")
    so.add_argument("--baselines", default="none", metavar="A,B",
                    help="peers timed on the same rows: dask-cudf (on each GPU count's workers, "
                    "its columns in GPU memory first) and duckdb (the machine's cores, the "
                    "Parquet copy); default none")
    so.add_argument("--mode", default="warm", choices=["warm", "cold"],
                    help="warm: tables in memory (GPU page caches emptied before each run); "
                    "cold: the OS page cache dropped before every run of every engine (root "
                    "only; --backend file on GPUs; --workdir on a disk)")
    so.add_argument("--compress", default="none", choices=["none", "zstd"],
                    help="zstd: the partitions hold a compressed copy of each column too, which "
                    "cold reads of whole columns read instead (default none)")
    so.add_argument("--dispatch", default="actor", choices=["actor", "task"],
                    help="how queries reach the workers: actor (a direct call of each worker's "
                    "actor, the default) or task (a task per worker through the scheduler)")
    so.add_argument("--no-plots", action="store_true",
                    help="skip the PNG of times and speed-ups (<out>-time.png)")
    so.set_defaults(func=cmd_bench_scaleout)
