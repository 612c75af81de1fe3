"""The commands that make and inspect tables: ``gen``, ``ingest`` (and ``--refresh``),
``verify``, ``info`` and ``demo``."""

from __future__ import annotations

import argparse
import sys

from bamql.cli.args import COMPRESS, FLOATS, names, size
from bamql.config import Compression, FloatEncoding
from bamql.errors import BamqlError


def cmd_gen(a: argparse.Namespace) -> int:
    from bamql.datasets.generator import GenParams
    from bamql.datasets.orc import generate_orc
    from bamql.progress import progress_bar

    params = GenParams(rows=a.rows, seed=a.seed, williamsburg_share=a.williamsburg_share)
    with progress_bar("generating", a.rows) as adv:
        r = generate_orc(a.out, params, files=a.files, workers=a.workers, progress=adv,
                         fmt=a.format, columns=names(a.columns))
    print(f"wrote {r.rows:,} rows to {len(r.files)} {a.format.upper()} file(s) in {a.out} "
          f"({r.bytes / 1e6:,.1f} MB) in {r.seconds:.2f} s: {r.rows_per_s:,.0f} rows/s")
    return 0


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
                   columns=names(opt["columns"]),
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


def add_data_commands(sub) -> None:
    """Register gen, ingest, verify, info and demo on the CLI's subparsers."""
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
    i.add_argument("--page-size", type=size, default=None, metavar="B",
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
    i.add_argument("--floats", default=None, choices=FLOATS,
                   help="auto (default): store float columns whose values are all decimals of at most "
                   "4 digits as scaled int16/int32, exactly (a 2-decimal fare takes 2 bytes, not 8); "
                   "plain: store every float as it comes")
    i.add_argument("--compress", default=None, choices=COMPRESS,
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
