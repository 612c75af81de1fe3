"""The ``bamql`` command: gen, ingest, verify, info, sql, shell, serve, demo."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bamql.config import Compression, Config, FloatEncoding, parse_size
from bamql.errors import BamqlError

_EPILOG = "Errors print one line; set BAMQL_DEBUG=1 or pass --debug for a traceback."


def _size(text: str) -> int:
    """'4096', '4KiB', '1MiB' into bytes (``bamql.config.parse_size``: KiB = 1024 B, KB = 1000 B)."""
    try:
        return parse_size(text, None)
    except BamqlError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def cmd_gen(a: argparse.Namespace) -> int:
    from bamql.datasets.generator import GenParams
    from bamql.datasets.orc import generate_orc
    from bamql.progress import progress_bar

    params = GenParams(rows=a.rows, seed=a.seed, williamsburg_share=a.williamsburg_share)
    with progress_bar("generating", a.rows) as adv:
        r = generate_orc(a.out, params, files=a.files, workers=a.workers, progress=adv,
                         fmt=a.format, columns=_names(a.columns))
    print(f"wrote {r.rows:,} rows to {len(r.files)} {a.format.upper()} file(s) in {a.out} "
          f"({r.bytes / 1e6:,.1f} MB) in {r.seconds:.2f} s: {r.rows_per_s:,.0f} rows/s")
    return 0


def _split(text: str) -> tuple[str, ...]:
    """``a, b,c`` -> ``("a", "b", "c")``."""
    return tuple(x.strip() for x in text.split(",") if x.strip())


def _names(text: str | None) -> tuple[str, ...] | None:
    """An option's ``a,b,c`` as names; None (not given) stays None."""
    return None if text is None else _split(text)


#: the choices of --floats and --compress, as the names argparse lists in its errors
#: (``decimals`` is for stores made for one query: ``storage.inplace``)
_FLOATS = [FloatEncoding.AUTO.value, FloatEncoding.PLAIN.value]
_COMPRESS = [c.value for c in Compression]

#: the ingest options that shape a table, with their defaults (None in the parser, so that a
#: refresh, which keeps the table's own, can tell which were given)
_SHAPING = {"page_size": 4096, "volumes": 1, "table": None, "partitions": 1, "groups": "none",
            "floats": FloatEncoding.AUTO, "compress": Compression.NONE, "columns": None, "cluster_by": None,
            "pack": False}


def cmd_ingest(a: argparse.Namespace) -> int:
    from bamql.progress import ingest_progress
    from bamql.storage.files import expand_all
    from bamql.storage.ingest import append, ingest
    from bamql.storage.sources import open_source

    if a.refresh:
        return _refresh(a)
    if not a.sources or a.out is None:
        raise BamqlError("ingest needs source files and --out TABLE_DIR (or --refresh TABLE_DIR)")
    opt = {k: d if getattr(a, k) is None else getattr(a, k) for k, d in _SHAPING.items()}
    sources = expand_all(a.sources)
    rows = sum(open_source(s).num_rows for s in sources)
    if a.append and a.cluster_by is not None:
        raise BamqlError("--cluster-by does not go with --append: the table keeps its own keys "
                         "(old and new rows are sorted together)")
    if a.append:  # the sources as named are recorded for a later --refresh
        with ingest_progress("appending", rows) as bars:
            r = append(a.sources, a.out, **bars)
        print(f"appended {rows:,} rows to {r.path}: {r.rows:,} rows now ({r.store_bytes / 1e6:,.1f} "
              f"MB store) in {r.seconds:.2f} s")
        return 0
    with ingest_progress("ingesting", rows) as bars:
        r = ingest(a.sources, a.out, page_size=opt["page_size"], volumes=opt["volumes"],
                   table=opt["table"], partitions=opt["partitions"], groups=opt["groups"],
                   floats=FloatEncoding(opt["floats"]), compress=Compression(opt["compress"]),
                   columns=_names(opt["columns"]),
                   cluster_by=opt["cluster_by"], pack=opt["pack"], **bars)
    print(f"ingested {r.rows:,} rows into {r.path} ({r.store_bytes / 1e6:,.1f} MB store, "
          f"page size {opt['page_size']} B) in {r.seconds:.2f} s: {r.rows / r.seconds:,.0f} rows/s, "
          f"{r.source_bytes / 1e6 / r.seconds:,.1f} MB/s of source")
    return 0


def _refresh(a: argparse.Namespace) -> int:
    """``bamql ingest --refresh TABLE_DIR``: append the new files of the table's sources."""
    from bamql.progress import ingest_progress
    from bamql.storage.ingest import refresh

    given = [k for k in _SHAPING if getattr(a, k) is not None]
    if a.append or given:
        flag = "--append" if a.append else "--" + given[0].replace("_", "-")
        raise BamqlError(f"{flag} does not go with --refresh: the table keeps its own sources "
                         "and settings")
    if a.sources and a.out is not None or len(a.sources) > 1:
        raise BamqlError("--refresh takes one table directory (bamql ingest --refresh data/trips)")
    out = a.out if a.out is not None else (a.sources[0] if a.sources else None)
    if out is None:
        raise BamqlError("--refresh needs the table directory (bamql ingest --refresh data/trips)")
    print(refresh(out, progress=ingest_progress).describe())
    return 0


def cmd_verify(a: argparse.Namespace) -> int:
    from bamql.storage.partitioned import open_table

    # a store not sealed on this machine is verified here, its problems listed, rather than
    # refused at open at its first (storage.seal); one found sound is trusted from then on
    with open_table(a.store, verify_unsealed=False) as s:
        problems = s.verify()
    if problems:
        for p in problems[:20]:
            print(f"{a.store}: {p}", file=sys.stderr)
        if len(problems) > 20:
            print(f"... and {len(problems) - 20} more", file=sys.stderr)
        raise BamqlError(f"store {a.store} is corrupt: {len(problems)} problem(s)")
    parts = s.parts  # a table of one store is a table of one partition
    pages = sum(p.manifest.all_pages for p in parts)
    groups = len(parts[0].manifest.groups)
    from bamql.storage.cluster import clustered_by

    m = parts[0].manifest
    print(f"{a.store}: OK ({s.rows:,} rows, {len(s.columns)} columns, {pages:,} pages "
          f"of {s.page_size} B" + (f" ({groups} row group(s) included)" if groups else "")
          + f", {len(parts)} partition(s)" + clustered_by(m.cluster_by, m.cluster_order)
          + ")")
    return 0


def cmd_info(a: argparse.Namespace) -> int:
    """``bamql info TABLE``: each column's storage and its bytes, plain and as stored."""
    from bamql.storage.cluster import clustered_by
    from bamql.storage.packing import column_sizes
    from bamql.storage.partitioned import open_table

    with open_table(a.store) as t:
        sizes = [column_sizes(p.manifest) for p in t.parts]
        m = t.parts[0].manifest
        print(f"{a.store}: {t.rows:,} rows, {len(t.columns)} columns, {t.page_size} B pages, "
              f"{len(t.parts)} partition(s)"
              + clustered_by(m.cluster_by, m.cluster_order))
        # the compressed copy's bytes per column, where every partition has one
        zst = [p.stream_bytes for p in t.parts] if all(p.stream_bytes for p in t.parts) else None
    print(f"  {'column':<24} {'stored as':<16} {'plain MB':>10} {'stored MB':>10} {'ratio':>6}"
          + (f" {'zstd MB':>10} {'z-ratio':>7}" if zst else ""))
    for k, c in enumerate(sizes[0]):
        plain = sum(s[k].plain_bytes for s in sizes)
        stored = sum(s[k].stored_bytes for s in sizes)
        how = c.dtype + (f", {c.bits} bits" if c.bits else "")
        copy = sum(z[c.name] for z in zst) if zst else 0
        print(f"  {c.name:<24} {how:<16} {plain / 1e6:>10.2f} {stored / 1e6:>10.2f} "
              f"{plain / stored if stored else 1.0:>6.2f}"
              + (f" {copy / 1e6:>10.2f} {stored / copy if copy else 1.0:>7.2f}" if zst else ""))
    return 0


def cmd_demo(a: argparse.Namespace) -> int:
    from bamql.cli.demo import run_demo

    return run_demo(rows=a.rows, workdir=a.dir, device=a.device)


def _bench_data_args(p: argparse.ArgumentParser, out: str, out_help: str) -> None:
    """The options both bench commands share: data size, queries, where data and results go."""
    p.add_argument("--rows", type=int, default=2_000_000, help="trips (default 2,000,000)")
    p.add_argument("--queries", default="q01,q02,q03,q04,q05,q06", help="comma-separated query names")
    p.add_argument("--workdir", default="bamql-bench-data", help="where data is generated and reused")
    p.add_argument("--out", default=out, help=out_help)


def _query_names(text: str) -> tuple[str, ...]:
    """``q01,q06`` -> names, every one a known query (else a one-line error)."""
    from bamql.queries import names

    queries = _split(text)
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
        shares = tuple(float(x) for x in _split(a.selectivity))
    except ValueError:
        raise BamqlError(f"--selectivity takes numbers such as 0.0005,0.01, not {a.selectivity!r}") from None
    if any(not 0 <= s <= 1 for s in shares):
        raise BamqlError("--selectivity values must be within 0..1")
    clustering = parse_cluster_by(a.cluster_by or None)
    cfg = BenchConfig(rows=a.rows, queries=queries, engines=_split(a.engines), modes=_split(a.modes),
                      reps=a.reps, page_sizes=tuple(_size(x) for x in _split(a.page_sizes)),
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
                       backend=a.backend, page_size=_size(a.page_size), workdir=Path(a.workdir),
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


def _version() -> str:
    """The installed package's version (the source tree's when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bamql")
    except PackageNotFoundError:
        return "unknown (not installed)"


class _Version(argparse.Action):
    """``--version``: looked up when asked for (``importlib.metadata`` takes a twentieth of a
    second, which every other command would pay when the parser is built)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help=None):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"bamql {_version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``bamql`` command."""
    p = argparse.ArgumentParser(
        prog="bamql",
        description="SQL over NYC-taxi tables that fetches dependent columns only for matching "
        "rows, through a page cache (BaM-style), on GPU or CPU.",
        epilog=_EPILOG,
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    p.add_argument("--version", action=_Version, help="print the version and exit")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", required=True)

    g = sub.add_parser("gen", help="generate a synthetic taxi table as ORC (or Parquet)",
                       description="Generate synthetic NYC yellow-taxi trips (calibrated on the "
                       "real 2019 TLC sample) as ORC files: zstd, 64 MiB stripes, 10,000-row index "
                       "(or, with --format parquet, zstd Parquet files of the same rows).")
    g.add_argument("--rows", type=int, required=True, help="number of trips")
    g.add_argument("--out", required=True, help="output directory (must not exist)")
    g.add_argument("--files", type=int, default=1, help="number of files (default 1)")
    g.add_argument("--format", choices=("orc", "parquet"), default="orc",
                   help="file format (default orc)")
    g.add_argument("--columns", default=None, metavar="A,B,...",
                   help="only these columns (default: all 18); the rows are the same")
    g.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    g.add_argument("--williamsburg-share", type=float, default=None, metavar="F",
                   help="share of pickups in zones 255/256, e.g. 0.0005 (default: the real share)")
    g.add_argument("--workers", type=int, default=None, help="processes (default: all cores)")
    g.set_defaults(func=cmd_gen)

    i = sub.add_parser("ingest", help="lay ORC/Parquet/CSV files out as a page store",
                       description="Ingest source files of one schema into a page store "
                       "directory (atomic: the table appears only when complete).")
    i.add_argument("sources", nargs="*", metavar="SRC",
                   help=".orc, .parquet or .csv files, directories (their files of those kinds) "
                   "or globs (*, **, ?; quote them and bamql expands them); also as s3://, "
                   "gs://, hdfs:// or file:// URIs. The table records them as given")
    i.add_argument("--out", default=None, help="table directory to create, e.g. data/trips")
    i.add_argument("--refresh", action="store_true",
                   help="bamql ingest --refresh TABLE_DIR: append the files that the table's "
                   "recorded sources name now and it lacks (atomically, with its own settings; "
                   "'up to date' if none); a file it holds that changed or vanished is an error")
    i.add_argument("--append", action="store_true",
                   help="add the sources' rows to the existing table --out (atomically: it is "
                   "rewritten beside the old one and swapped in; the other options are the "
                   "table's own)")
    i.add_argument("--page-size", type=_size, default=None, metavar="B",
                   help="page size, a power of two from 512 B to 1 MiB: bytes, or e.g. 4KiB "
                   "(KiB = 1024 B; KB = 1000 B) (default 4096)")
    i.add_argument("--volumes", type=int, default=None, help="volume files to stripe over (default 1)")
    i.add_argument("--table", default=None, help="table name (default: the directory's name)")
    i.add_argument("--partitions", type=int, default=None,
                   help="split into N row-range partitions (dealt out to Dask workers; default 1)")
    i.add_argument("--groups", default=None, metavar="SPEC",
                   help="row groups: second copies of columns laid out so that a cold gather from "
                   "disk reads a row's values of every member at once. auto (float columns, as many "
                   "per group as pages fit in 4 KiB), none (default), or a,b,c;d,e")
    i.add_argument("--floats", default=None, choices=_FLOATS,
                   help="auto (default): store float columns whose values are all decimals of at most "
                   "4 digits as scaled int16/int32, exactly (a 2-decimal fare takes 2 bytes, not 8); "
                   "plain: store every float as it comes")
    i.add_argument("--compress", default=None, choices=_COMPRESS,
                   help="zstd: also keep a compressed copy of every column, which cold streams and "
                   "scans read from disk when the cost model finds that quicker (gathers keep "
                   "reading single pages); none (default): pages only")
    i.add_argument("--columns", default=None, metavar="A,B,...",
                   help="only these columns (default: all); the others are not even decoded")
    i.add_argument("--cluster-by", default=None, metavar="A,B",
                   help="sort each partition's rows by these columns (ascending, NULLs last), so "
                   "that filters on them prune pages and gathers read few, dense pages; "
                   "zorder(a,b): order them by a Z-order of the columns, so that a filter on any "
                   "one of them prunes; an --append orders the table's old and new rows together")
    i.add_argument("--pack", action="store_true", default=None,
                   help="bit-pack integer, timestamp, string-code and scaled-decimal columns to "
                   "the bits of their range, with a frame of reference per page (a zone id takes "
                   "9 bits, not 16); gathers still read one page per value")
    i.set_defaults(func=cmd_ingest)

    v = sub.add_parser(
        "verify", help="check a store's pages and metadata against each other",
        description="Check a table (every partition of a partitioned one). Opening it checks "
        "the seals of manifest.json, pages.npz and partitions.json, that every file is a "
        "regular file inside the table, and the manifest's consistency (storage types, page "
        "widths, extents against the row count, dictionaries sorted and unique, row groups). "
        "verify then reads every page and checks its checksum, the files' sizes, and each "
        "column's zone maps, NULL counts, value sets, range and histogram against its values; "
        "row-group copies against the columns they copy; the compressed copy against the "
        "pages. Each problem is one line; the exit status is 1 if there is any.")
    v.add_argument("store", help="table directory")
    v.set_defaults(func=cmd_verify)

    n = sub.add_parser("info", help="show a table's columns and their bytes, plain and stored",
                       description="Each column's storage type, its bits per value when packed "
                       "(ingest --pack), and its bytes as plain pages and as stored; with a "
                       "compressed copy (ingest --compress zstd), the copy's bytes and stored/copy.")
    n.add_argument("store", help="table directory")
    n.set_defaults(func=cmd_info)

    d = sub.add_parser("demo", help="generate, ingest and query a small taxi table",
                       description="The main job on an embedded default: generate a small "
                       "taxi table, ingest it, run the taxi queries Q1-Q6 and show bytes read.")
    d.add_argument("--rows", type=int, default=1_000_000, help="trips (default 1,000,000)")
    d.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    d.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"],
                   help="engine device (default auto: GPU if one works, else CPU)")
    d.set_defaults(func=cmd_demo)

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
    b.add_argument("--floats", default=FloatEncoding.AUTO.value, choices=_FLOATS,
                   help="decimal floats as scaled integers in the stores (default auto; see "
                   "bamql ingest --floats)")
    b.add_argument("--compress", default=Compression.NONE.value, choices=_COMPRESS,
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

    from bamql.cli.serve import add_serve_command
    from bamql.cli.sql import add_sql_commands

    add_sql_commands(sub)
    add_serve_command(sub)

    return p


def _one_line_notes() -> None:
    """bamql's own warnings (``KernelCacheWarning``, ``StoreWarning``) print as one line,
    ``bamql: note: ...``; other warnings as Python prints them."""
    import warnings

    from bamql.errors import KernelCacheWarning, StoreWarning

    default = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, (KernelCacheWarning, StoreWarning)):
            print(f"bamql: note: {message}", file=sys.stderr)
        else:
            default(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``bamql`` command; returns the exit code. Run as the command
    (``argv`` None), a ``bamql sql`` leaves its objects to the OS at exit (``_skip_teardown``)."""
    _one_line_notes()
    parser = build_parser()
    a = parser.parse_args(argv)
    if argv is None and a.cmd in ("sql", "shell"):  # the command itself: no pandas object
        from bamql.storage.arrownp import without_pandas  # here, none for pyarrow to look for

        without_pandas()
    rc = _run(a)
    if argv is None and a.cmd == "sql":  # one query, answered: the process ends next
        _skip_teardown()
    return rc


def _run(a: argparse.Namespace) -> int:
    """Run the parsed command ``a``; its exit code, its errors one line each."""
    debug = a.debug
    try:
        debug = debug or Config.from_env().debug  # BAMQL_DEBUG
        return a.func(a)
    except BamqlError as e:
        if debug:
            raise
        print(f"bamql: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bamql: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # unexpected: still one line unless debugging
        if debug:
            raise
        print(f"bamql: internal error: {type(e).__name__}: {e} (rerun with --debug)", file=sys.stderr)
        return 2


def _skip_teardown() -> None:
    """Leave what a one-shot command made to the OS at exit, not to the garbage collector.

    The interpreter's exit collects every cycle of objects left, numba's and LLVM's among
    them, which takes longer than a small query; once ``bamql sql`` has printed its answer
    and closed its session, nothing is left that needs it. The collector is stopped and the
    objects moved where it never looks (``gc.freeze``); the exit still runs the ``atexit``
    handlers, waits for threads and flushes the output as always.
    """
    import gc

    gc.disable()
    gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
