"""The differential corpus: every query of ``tests/sql/*.sql`` through bamql and DuckDB on
the same rows, over a matrix of engines, backends, caches, store shapes and data sets.

In the spirit of DuckDB's sqllogictest (queries in files, answers from a reference) and
SQLancer (the same query over many physical layouts must give one answer).

Query files
    ``tests/sql/<feature>.sql``: a ``-- schema: trips`` or ``-- schema: hostile`` line,
    then statements separated by ``;`` (comment lines start with ``--``). A query's id is
    ``<file>:<n>`` (1-based). A query with ``ORDER BY`` is compared in order, others as
    multisets. ``refused.sql`` holds queries bamql must refuse with one-line
    ``bamql.errors`` errors; they are not part of the differential run.

Data sets (each one table, named by its schema: ``trips`` or ``hostile``)
    ``sample``: the real 2019 TLC sample (CSV); ``gen-<share>``: generated trips at several
    Williamsburg shares (the Q1-Q6 selectivity), as ORC and Parquet; hostile tables built
    with pyarrow: NULLs in every column, all-NULL columns, NaN and +-inf, extreme and
    negative decimals and integers, timestamps before 1970, unicode strings, an empty
    table, one row, and row counts that are not a multiple of anything.

The reference is DuckDB over the Arrow table that pyarrow reads back from the ORC and
Parquet files that bamql ingests; a CSV is read by DuckDB's own ``read_csv``.

Command line (the GPU matrix on a real GPU; the log has one JSON line per (query, data set,
configuration) and a summary line)::

    python -m tests.sql.corpus --device gpu --backends host,gpu,file --caches 4,default \\
        --shapes all --spread 2 --log corpus-gpu.jsonl
"""

from __future__ import annotations

import argparse
import faulthandler
import itertools
import json
import math
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.orc as paorc
import pyarrow.parquet as pq

QUERY_DIR = Path(__file__).resolve().parent
REPO = QUERY_DIR.parents[1]
SAMPLE_DIR = REPO / "tests" / "data" / "tlc-sample"
SCHEMAS = ("trips", "hostile")


# -- queries ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Query:
    """One corpus query: ``id`` is ``<file>:<n>``; ``schema`` names its table."""

    id: str
    schema: str
    sql: str

    @property
    def ordered(self) -> bool:
        """Compared row by row in order (it has an ORDER BY) rather than as a multiset."""
        return "ORDER BY" in self.sql.upper()


def parse_file(path: Path) -> list[Query]:
    """The queries of one ``.sql`` file of the corpus."""
    schema = None
    body = []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\s*--\s*schema:\s*(\w+)", line)
        if m:
            schema = m.group(1)
            continue
        if line.strip().startswith("--"):
            continue
        body.append(line)
    if schema not in SCHEMAS:
        raise ValueError(f"{path.name}: needs a '-- schema: trips|hostile' line")
    stmts = [" ".join(s.split()) for s in "\n".join(body).split(";")]
    return [Query(f"{path.stem}:{i}", schema, s) for i, s in enumerate((s for s in stmts if s), 1)]


def load_queries(directory: Path = QUERY_DIR, include_refused: bool = False) -> list[Query]:
    """Every query of the corpus, file by file (``refused.sql`` only when asked)."""
    out: list[Query] = []
    for p in sorted(directory.glob("*.sql")):
        if p.stem.startswith("refused") != include_refused:
            continue
        out += parse_file(p)
    return out


# -- store shapes, engines --------------------------------------------------------------
@dataclass(frozen=True)
class Shape:
    """How a table is laid out at ingest."""

    page_size: int = 4096
    groups: str = "none"  # "auto" | "none"
    floats: str = "auto"  # "auto" | "plain"
    compress: str = "none"  # "none" | "zstd"
    partitions: int = 1
    #: rows sorted by the schema's ``CLUSTER_KEYS`` (``ingest --cluster-by``)
    cluster: bool = False
    #: clustered by a Z-order of the keys instead (``--cluster-by zorder(a,b)``)
    zorder: bool = False
    #: integer-stored columns bit-packed (``ingest --pack``)
    pack: bool = False
    #: no store: the rows written as Parquet with small row groups and queried in place
    #: (``FROM 'x.parquet'``: ``storage.inplace``); the other options are the defaults
    files: bool = False

    @property
    def name(self) -> str:
        if self.files:
            return "files"
        return (f"p{self.page_size}-g{self.groups}-f{self.floats}-c{self.compress}"
                f"-x{self.partitions}" + ("-k" if self.cluster else "")
                + ("-z" if self.zorder else "") + ("-b" if self.pack else ""))

    @classmethod
    def parse(cls, name: str) -> Shape:
        if name == "files":
            return FILES_SHAPE
        m = re.fullmatch(r"p(\d+)-g(auto|none)-f(auto|plain)-c(none|zstd)-x(\d+)(-k)?(-z)?(-b)?",
                         name)
        if not m or m[7] and not m[6]:
            raise ValueError(f"not a shape name: {name!r} (e.g. {BASE_SHAPE.name})")
        return cls(int(m[1]), m[2], m[3], m[4], int(m[5]), bool(m[6]), bool(m[7]), bool(m[8]))


BASE_SHAPE = Shape()
FILES_SHAPE = Shape(files=True)
#: Every combination of the store's options (48 shapes).
ALL_SHAPES: tuple[Shape, ...] = tuple(
    Shape(p, g, f, c, x) for p, g, f, c, x in itertools.product(
        (512, 4096, 65536), ("none", "auto"), ("auto", "plain"), ("none", "zstd"), (1, 3)))
#: A covering set (each value of each option at least twice) for CI; the base shape first.
CI_SHAPES: tuple[Shape, ...] = (
    BASE_SHAPE,
    Shape(512, "auto", "auto", "zstd", 1),
    Shape(512, "none", "plain", "none", 3),
    Shape(65536, "none", "plain", "zstd", 1),
    Shape(65536, "auto", "auto", "none", 3),
    Shape(4096, "auto", "plain", "zstd", 3),
    Shape(512, "none", "auto", "none", 3, cluster=True),
    Shape(512, "auto", "auto", "zstd", 3, pack=True),
    Shape(65536, "none", "auto", "none", 1, cluster=True, pack=True),
    Shape(512, "none", "auto", "none", 3, cluster=True, zorder=True),
)
#: What a clustered shape sorts each schema's rows by (NULLs in the hostile keys).
CLUSTER_KEYS = {"trips": "pickup_location_id,pickup_datetime", "hostile": "k,s"}


@dataclass(frozen=True)
class Engine:
    """Where queries run: the CPU, or the GPU with a backend and a page cache of
    ``cache_slots`` pages (None: the session's default size)."""

    device: str = "cpu"
    backend: str | None = None
    cache_slots: int | None = None

    @property
    def name(self) -> str:
        if self.device == "cpu":
            return "cpu"
        slots = "default" if self.cache_slots is None else f"{self.cache_slots}slots"
        return f"gpu-{self.backend}-{slots}"

    def connect(self, datadir: Path, page_size: int):
        import bamql

        if self.device == "cpu":
            return bamql.connect(datadir, device="cpu")
        cache = None if self.cache_slots is None else str(self.cache_slots * page_size)
        return bamql.connect(datadir, device="gpu", backend=self.backend, cache=cache)


# -- data -------------------------------------------------------------------------------
@dataclass
class Dataset:
    """One table (named by its schema) from source files, and the Arrow table DuckDB sees."""

    name: str
    schema: str
    files: list[Path]
    reference: pa.Table = field(repr=False)

    @property
    def rows(self) -> int:
        return self.reference.num_rows

    def has_columns_of(self, q: Query) -> bool:
        """Whether the table has every column ``q`` names (a CSV lacks the all-NULL ones)."""
        return query_columns(q) <= set(self.reference.column_names)


_STRING = re.compile(r"'(?:[^']|'')*'")
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def query_columns(q: Query) -> set[str]:
    """The columns of ``q``'s schema that its text names."""
    known = _schema_columns(q.schema)
    return {w for w in _WORD.findall(_STRING.sub("", q.sql)) if w in known}


def _schema_columns(schema: str) -> frozenset[str]:
    if schema == "hostile":
        return frozenset(hostile_table(0).column_names)
    from bamql.datasets.schema import TAXI_SCHEMA

    return frozenset(TAXI_SCHEMA.names)


def read_back(paths: Sequence[Path]) -> pa.Table:
    """The sources as the reference sees them: ORC and Parquet as pyarrow reads them (the
    reader bamql's ingest uses, typed by the file), CSV as DuckDB's own ``read_csv`` reads
    it (a CSV is typed by its reader: DuckDB's sniffer and NULL rules are the reference)."""
    parts = []
    for p in paths:
        if p.suffix == ".orc":
            parts.append(paorc.ORCFile(str(p)).read())
        elif p.suffix == ".parquet":
            parts.append(pq.read_table(p))
        else:
            con = duckdb.connect()
            parts.append(con.sql("SELECT * FROM read_csv(?)", params=[str(p)]).fetch_arrow_table())
    if len(parts) > 1:
        return pa.concat_tables([t.cast(parts[0].schema) for t in parts])
    return parts[0]


UNICODE = ["", "a", "Z", "é", "ß", "日本", "🚕", "naïve", "Ωmega", "a b", "ＡＢ", "N"]
_US = 1_000_000


def hostile_table(rows: int, seed: int = 0) -> pa.Table:
    """A table of ``rows`` rows meant to break things: NULLs in every column (but ``id``),
    all-NULL columns of each kind, NaN/±inf/-0.0, extreme integers (past 2**53, near the
    int64 limits), negative and 12-digit decimals, whole-number floats, timestamps and
    dates from 1900 to 2100, unicode strings and a boolean."""
    rng = np.random.default_rng([seed, rows])
    n = rows

    def nulls(share: float) -> np.ndarray:
        return rng.random(n) < share

    def pick(values: list, n: int) -> list:
        return [values[i] for i in rng.integers(0, len(values), n)] if n else []

    k = rng.integers(0, 7, n)
    neg = rng.integers(-120, 121, n)
    small = rng.integers(-127, 128, n).astype(np.int8)
    big_pool = [2**53 + 1, 2**53 - 1, -(2**53) - 1, 2**62, -(2**62), 9_223_372_036_854_775_807,
                -9_223_372_036_854_775_807, 0, 1, -1, 123_456_789_012_345_678]
    big = np.array(pick(big_pool, n), dtype=np.int64)
    mid = rng.integers(-(10**12), 10**12, n)  # sums stay inside int64
    f = np.round(rng.normal(0.0, 300.0, n), 6)
    if n > 5:
        f[rng.integers(0, n, 3)] = [1.5e300, -1e-300, -0.0]
    fx = rng.normal(0.0, 10.0, n)
    specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0])
    sp = rng.random(n) < 0.15
    fx[sp] = specials[rng.integers(0, len(specials), int(sp.sum()))]
    m = np.round(rng.uniform(-300.0, 300.0, n), 2)
    w = np.round(rng.uniform(-5000, 5000, n))
    f32 = rng.normal(0.0, 50.0, n).astype(np.float32)
    d_cents = rng.integers(-(10**12) + 1, 10**12, n)
    if n > 4:
        d_cents[:4] = [10**12 - 1, -(10**12) + 1, 1, -1]
    dec = pa.array([Decimal(int(c)).scaleb(-2) for c in d_cents], type=pa.decimal128(12, 2))
    ts = rng.integers(-70 * 365 * 86400, 130 * 365 * 86400, n) * _US
    ts += rng.integers(0, _US, n) * (rng.random(n) < 0.3)
    if n > 3:
        ts[:3] = [-1, -_US * 3600 - 1, 0]  # just before 1970, an hour before it, the epoch
    s = pick(UNICODE, n)
    b = rng.random(n) < 0.4

    def arr(v, typ, share=0.1):
        return pa.array(v, type=typ, mask=nulls(share) if n else None)

    cols = {
        "id": pa.array(np.arange(n), pa.int64()),
        "k": arr(k, pa.int64()),
        "neg": arr(neg, pa.int32()),
        "small": arr(small, pa.int8(), 0.05),
        "big": arr(big, pa.int64()),
        "mid": arr(mid, pa.int64()),
        "f": arr(f, pa.float64()),
        "fx": arr(fx, pa.float64()),
        "m": arr(m, pa.float64()),
        "w": arr(w, pa.float64()),
        "f32": arr(f32, pa.float32()),
        "dec": pa.array(dec.to_pylist(), type=pa.decimal128(12, 2), mask=nulls(0.1) if n else None),
        "ts": arr(ts, pa.timestamp("us")),
        "s": pa.array(s, type=pa.string(), mask=nulls(0.1) if n else None),
        "b": arr(b, pa.bool_()),
        "nul_i": pa.nulls(n, pa.int64()),
        "nul_f": pa.nulls(n, pa.float64()),
        "nul_s": pa.nulls(n, pa.string()),
        "nul_ts": pa.nulls(n, pa.timestamp("us")),
    }
    # DATEs from 1900 to 2100 (issue 41), drawn after every other column's values and NULLs,
    # which stay as they were
    days = rng.integers(-70 * 365, 130 * 365, n)
    if n > 3:
        days[:3] = [-1, 0, 59]  # 1969-12-31, the epoch, 1970-03-01 (after no leap day)
    cols["dt"] = arr(days.astype(np.int32), pa.date32())
    cols["nul_dt"] = pa.nulls(n, pa.date32())
    return pa.table(cols)


#: What the hostile tables' file names carry, so that a work directory's files of an older
#: ``hostile_table`` (before its DATE columns) are made again, not reused
HOSTILE_VERSION = "v2"
#: (name, rows, seed, format) of the hostile data sets; 1237 and 4099 are primes.
HOSTILE = (("hostile", 1237, 1, "parquet"), ("hostile-csv", 911, 2, "csv"),
           ("hostile-one", 1, 3, "orc"), ("hostile-empty", 0, 4, "parquet"),
           ("hostile-big", 4099, 5, "orc"))
#: Williamsburg shares of the generated trips: rare, Q1-Q6's 0.05%-ish, and common.
SHARES = (0.0005, 0.01, 0.3)


def write_source(t: pa.Table, path: Path, fmt: str) -> Path:
    """Write ``t`` as ``fmt`` (parquet, orc, csv) to ``path`` (suffix added)."""
    p = path.with_suffix("." + fmt)
    if fmt == "parquet":
        pq.write_table(t, p, row_group_size=max(1, (t.num_rows // 3) or 1))
    elif fmt == "orc":
        paorc.write_table(t, str(p), stripe_size=64 << 10)
    else:
        if "dec" in t.column_names:  # a CSV has no decimals: the text is read as float64
            t = t.set_column(t.column_names.index("dec"), "dec", t["dec"].cast(pa.float64()))
        # an all-empty CSV column reads back as type null, which nothing can store
        t = t.select([c for c in t.column_names if not c.startswith("nul_")])
        pacsv.write_csv(t, p)
    return p


def build_datasets(workdir: Path, gen_rows: int = 20_000, names: Iterable[str] | None = None,
                   hostile_scale: float = 1.0) -> list[Dataset]:
    """Make (or reuse) the source files of the data sets under ``workdir/sources``.

    ``gen_rows``: rows of each generated trips table; ``hostile_scale`` scales the hostile
    tables of more than one row (rounded to an odd count). ``names``: only these."""
    from bamql.datasets.generator import GenParams, generate_chunk

    src = workdir / "sources"
    src.mkdir(parents=True, exist_ok=True)
    want = set(names) if names is not None else None
    out: list[Dataset] = []

    def wanted(name: str) -> bool:
        return want is None or name in want

    if wanted("sample"):
        files = sorted(SAMPLE_DIR.glob("yellow_tripdata_sample_2019-*.csv"))
        out.append(Dataset("sample", "trips", files, read_back(files)))
    for i, share in enumerate(SHARES):
        name = f"gen-{share:g}"
        if not wanted(name):
            continue
        fmt = ("orc", "parquet", "orc")[i % 3]
        d = src / f"{name}-{gen_rows}"
        if not d.exists():
            tmp = src / f".{d.name}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            t = generate_chunk(GenParams(rows=gen_rows, seed=100 + i, williamsburg_share=share), 0)
            cut = (gen_rows * 2) // 3 + 1  # two files of uneven length
            write_source(t.slice(0, cut), tmp / "a", fmt)
            write_source(t.slice(cut), tmp / "b", fmt)
            os.rename(tmp, d)
        files = sorted(d.glob(f"*.{fmt}"))
        out.append(Dataset(name, "trips", files, read_back(files)))
    for name, rows, seed, fmt in HOSTILE:
        if not wanted(name):
            continue
        if rows > 1:
            rows = max(3, int(rows * hostile_scale)) | 1
        p = src / f"{name}-{rows}-{HOSTILE_VERSION}.{fmt}"
        if not p.exists():
            tmp = write_source(hostile_table(rows, seed), src / f".{name}-{rows}.tmp", fmt)
            os.rename(tmp, p)
        out.append(Dataset(name, "hostile", [p], read_back([p])))
    return out


def dataset_names() -> list[str]:
    """Every data set's name."""
    return ["sample", *(f"gen-{s:g}" for s in SHARES), *(h[0] for h in HOSTILE)]


def parquet_files(ds: Dataset, workdir: Path) -> Path:
    """``ds``'s reference rows as one Parquet file of about seven row groups (so that
    pushed filters prune some), made once: what the ``files`` shape queries in place."""
    p = workdir / "files" / f"{ds.name}-{ds.rows}.parquet"
    if not p.exists():
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f".{p.name}.tmp")
        pq.write_table(ds.reference, tmp, row_group_size=max(1, ds.rows // 7 + 1))
        os.rename(tmp, p)
    return p


def in_place(sql: str, table: str, path: Path) -> str:
    """``sql`` with each FROM or JOIN of ``table`` reading ``path`` in place instead (under
    the table's name as its alias, so that qualified columns still resolve)."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(sql, dialect="duckdb")
    ctes = [c for c in tree.find_all(exp.CTE) if c.alias == table]

    def names_cte(t: exp.Table) -> bool:
        """``t`` names a CTE of the table's name (not inside that CTE's own body, where the
        name is still the table: CTEs here are not recursive)."""
        return any(t.find_ancestor(exp.CTE) is not c for c in ctes)

    for t in list(tree.find_all(exp.Table)):
        if t.name == table and not t.args.get("db") and not names_cte(t):
            if not t.alias:
                t.set("alias", exp.TableAlias(this=exp.to_identifier(table)))
            t.set("this", exp.to_identifier(str(path), quoted=True))
    return tree.sql(dialect="duckdb")


def store(ds: Dataset, shape: Shape, workdir: Path) -> Path:
    """The data directory holding ``ds`` ingested with ``shape`` (made once, then reused).
    More partitions than rows would be refused; such a table gets one per row (or one)."""
    from bamql.errors import StoreError
    from bamql.storage.ingest import ingest
    from bamql.storage.partitioned import open_table

    datadir = workdir / "stores" / f"{ds.name}-{ds.rows}" / shape.name
    table = datadir / ds.schema
    if table.exists():
        try:  # a store kept from an earlier run, by a bamql that may have changed since
            open_table(table)
        except StoreError:
            shutil.rmtree(table)
    if not table.exists():
        parts = max(1, min(shape.partitions, ds.rows))
        ingest(ds.files, table, page_size=shape.page_size,
               groups=None if shape.groups == "none" else shape.groups, floats=shape.floats,
               compress=shape.compress, partitions=parts,
               cluster_by=(f"zorder({CLUSTER_KEYS[ds.schema]})" if shape.zorder
                           else CLUSTER_KEYS[ds.schema]) if shape.cluster else None, pack=shape.pack)
    return datadir


# -- the reference and the comparison --------------------------------------------------
def duck_rows(sql: str, ds: Dataset) -> list[tuple]:
    """DuckDB's answer over the data set's Arrow table, registered under its schema name,
    and the zone lookup that every bamql session registers as ``zones``."""
    from bamql.api.zones import zones_table
    from tests.reference import duck_tables

    return duck_tables(sql, {ds.schema: ds.reference, "zones": zones_table()})


def same(ours: list[tuple], ref: list[tuple], ordered: bool) -> bool:
    """The corpus's one notion of equal answers (``tests.reference.assert_same_rows``)."""
    from tests.reference import assert_same_rows

    try:
        assert_same_rows(ours, ref, ordered)
    except AssertionError:
        return False
    return True


def _plain(v):
    """A JSON-able rendering of a value of an answer."""
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    if isinstance(v, datetime | Decimal):
        return str(v)
    if isinstance(v, int) and abs(v) > 2**53:
        return str(v)
    return v


def _rows_json(rows: list[tuple] | None, limit: int = 8) -> list | None:
    if rows is None:
        return None
    return [[_plain(v) for v in r] for r in rows[:limit]]


def one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:400]


@dataclass
class Outcome:
    """One (query, data set, configuration) check."""

    query: str
    dataset: str
    shape: str
    engine: str
    status: str  # ok | mismatch | error | ref-error | skipped
    sql: str = ""
    ours: list | None = None
    ref: list | None = None
    error: str = ""
    seconds: float | None = None

    def line(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v not in (None, "")},
                          ensure_ascii=False)

    def brief(self) -> str:
        what = self.error if self.status != "mismatch" else f"ours={self.ours} duckdb={self.ref}"
        return f"{self.status}: {self.query} [{self.dataset} {self.shape} {self.engine}] " \
               f"{self.sql} -> {what}"


class References:
    """DuckDB's answers, computed once per (query, data set)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str], tuple[list[tuple] | None, str]] = {}

    def get(self, q: Query, ds: Dataset) -> tuple[list[tuple] | None, str]:
        key = (q.id, ds.name)
        if key not in self._cache:
            try:
                self._cache[key] = (duck_rows(q.sql, ds), "")
            except Exception as e:  # noqa: BLE001 - reported, never raised
                self._cache[key] = (None, one_line(e))
        return self._cache[key]


#: The check in flight (an Outcome) and when it started: what a watchdog reports as hung.
IN_FLIGHT: list = [None, 0.0]


def run_queries(queries: Sequence[Query], ds: Dataset, shape: Shape, engine: Engine,
                workdir: Path, refs: References | None = None,
                on_outcome: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Run ``queries`` (those of ``ds``'s schema) on ``ds`` stored as ``shape`` on ``engine``;
    an outcome per query, never an exception (ingest or connect failures fail every query)."""
    refs = refs or References()
    qs = [q for q in queries if q.schema == ds.schema and ds.has_columns_of(q)]
    out: list[Outcome] = []

    def emit(o: Outcome) -> None:
        out.append(o)
        if on_outcome:
            on_outcome(o)

    try:
        if shape.files:
            path = parquet_files(ds, workdir)
            con = engine.connect(None, shape.page_size)
        else:
            datadir = store(ds, shape, workdir)
            con = engine.connect(datadir, shape.page_size)
    except Exception as e:  # noqa: BLE001
        msg = "setup: " + one_line(e)
        for q in qs:
            emit(Outcome(q.id, ds.name, shape.name, engine.name, "error", q.sql, error=msg))
        return out
    try:
        for q in qs:
            ref, ref_err = refs.get(q, ds)
            o = Outcome(q.id, ds.name, shape.name, engine.name, "ok", q.sql)
            t0 = time.perf_counter()
            IN_FLIGHT[:] = [o, t0]
            try:
                ours = con.sql(in_place(q.sql, ds.schema, path) if shape.files else q.sql).rows()
            except Exception as e:  # noqa: BLE001 - a crash is a finding, not a stop
                IN_FLIGHT[:] = [None, 0.0]
                o.status, o.error = "error", one_line(e)
                if os.environ.get("BAMQL_CORPUS_TRACEBACK"):
                    o.error += " | " + traceback.format_exc()[-1500:]
                emit(o)
                continue
            IN_FLIGHT[:] = [None, 0.0]
            o.seconds = round(time.perf_counter() - t0, 3)
            if ref is None:
                o.status, o.error, o.ours = "ref-error", ref_err, _rows_json(ours)
            elif not same(ours, ref, q.ordered):
                o.status, o.ours, o.ref = "mismatch", _rows_json(ours), _rows_json(ref)
            emit(o)
    finally:
        try:
            con.close()
        except Exception:  # noqa: BLE001
            pass
    return out


def assignments(queries: Sequence[Query], shapes: Sequence[Shape], spread: int) -> dict[Shape, list[Query]]:
    """Which queries run on which shape: every query on the first shape, and query ``j`` on
    ``spread`` of the others, in a deterministic rotation (``spread`` 0: the first only;
    ``spread >= len(shapes) - 1``: every shape)."""
    out: dict[Shape, list[Query]] = {s: [] for s in shapes}
    out[shapes[0]] = list(queries)
    others = list(shapes[1:])
    if not others:
        return out
    take = min(spread, len(others))
    for j, q in enumerate(queries):
        for r in range(take):
            out[others[(j + r * max(1, len(others) // take)) % len(others)]].append(q)
    return out


#: Data sets whose stores share most kernels (same dtypes and ranges) with ``gen-0.01`` or
#: ``hostile``: a query runs on them for little more than the run itself.
PRIMARY = ("gen-0.01", "gen-0.3", "hostile", "hostile-big")


def ci_plan(queries: Sequence[Query], names: Sequence[str], shapes: Sequence[Shape] = CI_SHAPES,
            every: int = 3, secondary_every: int = 3) -> list[tuple[Shape, str, list[Query]]]:
    """The CPU matrix CI runs, as (shape, data set, queries).

    Compiling a query's kernels (~1 s each on a 2-core machine, the kernels' source holds
    the query's constants) costs far more than running it, and the CPU kernels of one query
    are the same on every page size, compression and partitioning. So CI takes one subset,
    every ``every``-th query, and runs all of it on every shape (over ``gen-0.01`` and
    ``hostile``; on the base shape also over their kernel-sharing siblings), and every
    ``secondary_every``-th query of the subset over the other data sets on every shape.
    The whole corpus on every shape is the command line's job (``--shapes ci --spread 5``)."""
    subset = list(queries)[::every]
    out = []
    for i, shape in enumerate(shapes):
        main = PRIMARY if i == 0 else ("gen-0.01", "hostile")
        for name in names:
            qs = subset if name in main else subset[i % secondary_every::secondary_every]
            if name in PRIMARY and name not in main:
                continue
            out.append((shape, name, qs))
    return out


# -- the command line -------------------------------------------------------------------
def _shapes(arg: str) -> list[Shape]:
    if arg == "all":
        return [BASE_SHAPE, *(s for s in ALL_SHAPES if s != BASE_SHAPE)]
    if arg == "ci":
        return list(CI_SHAPES)
    if arg == "base":
        return [BASE_SHAPE]
    if arg == "files":
        return [FILES_SHAPE]
    return [Shape.parse(s) for s in arg.split(",")]


def _engines(device: str, backends: str, caches: str) -> list[Engine]:
    if device == "cpu":
        return [Engine()]
    slots = [None if c == "default" else int(c) for c in caches.split(",")]
    return [Engine("gpu", b, c) for c in slots for b in backends.split(",")]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.sql.corpus", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    p.add_argument("--backends", default="host,gpu,file", help="GPU backends (host,gpu,file)")
    p.add_argument("--caches", default="4,default",
                   help="GPU page caches in slots (pages), or 'default': e.g. 1,4,64,default")
    p.add_argument("--shapes", default="ci",
                   help="base | ci | all | files (Parquet in place) | names like "
                   "p512-gauto-fauto-czstd-x3 (comma-separated)")
    p.add_argument("--spread", type=int, default=1,
                   help="other shapes each query runs on, besides the first shape (all: 99)")
    p.add_argument("--datasets", default="all", help="comma-separated names (all: " +
                   ",".join(dataset_names()) + ")")
    p.add_argument("--gen-rows", type=int, default=20_000, help="rows of each generated table")
    p.add_argument("--hostile-scale", type=float, default=1.0)
    p.add_argument("--queries", default="", help="only query ids starting with one of these")
    p.add_argument("--every", type=int, default=1, help="only every N-th query (a subset)")
    p.add_argument("--include", default="",
                   help="these query ids (e.g. aggregates:7,selectivity:5) join the --every subset")
    p.add_argument("--workdir", type=Path, default=None,
                   help="where sources and stores go (kept for reuse; default: a temp dir)")
    p.add_argument("--log", type=Path, default=Path("corpus.jsonl"))
    p.add_argument("--budget-s", type=float, default=0.0,
                   help="stop starting checks after this many seconds; the rest are logged as "
                        "skipped (0: no limit)")
    p.add_argument("--hang-s", type=float, default=600.0,
                   help="a query running this long is logged as a hang, with the summary, "
                        "and the run ends (exit 3): a hung kernel cannot be taken back")
    p.add_argument("--part", default="1/1", help="K/N: only the K-th of N slices of the work")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    if hasattr(faulthandler, "register"):  # `kill -USR1 <pid>` prints where a slow run is
        faulthandler.register(signal.SIGUSR1, all_threads=True)

    t0 = time.perf_counter()
    workdir = a.workdir or Path(tempfile.mkdtemp(prefix="bamql-corpus-"))
    workdir.mkdir(parents=True, exist_ok=True)
    queries = load_queries()
    if a.queries:
        queries = [q for q in queries if q.id.startswith(tuple(a.queries.split(",")))]
    keep = {q.id for q in queries[::max(1, a.every)]}
    keep |= set(a.include.split(",")) if a.include else set()
    queries = [q for q in queries if q.id in keep]
    shapes = _shapes(a.shapes)
    engines = _engines(a.device, a.backends, a.caches)
    names = None if a.datasets == "all" else a.datasets.split(",")
    datasets = build_datasets(workdir, a.gen_rows, names, a.hostile_scale)
    per_shape = assignments(queries, shapes, a.spread)
    k, n = (int(x) for x in a.part.split("/"))
    work = [(shape, eng, ds) for shape in shapes for eng in engines for ds in datasets]
    work = [w for i, w in enumerate(work) if i % n == k - 1]
    counts = {"ok": 0, "mismatch": 0, "error": 0, "ref-error": 0, "skipped": 0, "hang": 0}
    configs: set[tuple[str, str]] = set()
    checked: set[str] = set()
    refs = References()
    a.log.parent.mkdir(parents=True, exist_ok=True)
    with a.log.open("w", encoding="utf-8") as log:
        def record(o: Outcome) -> None:
            counts[o.status] += 1
            configs.add((o.shape, o.engine))
            checked.add(o.query)
            log.write(o.line() + "\n")
            log.flush()
            if o.status != "ok" and not a.quiet:
                print(o.brief()[:600], flush=True)

        def summary() -> dict:
            return {"summary": True, "queries": len(checked), "configurations": len(configs),
                    "checks": sum(counts.values()), **counts,
                    "mismatches": counts["mismatch"] + counts["error"] + counts["ref-error"]
                    + counts["hang"], "seconds": round(time.perf_counter() - t0, 1),
                    "device": a.device, "datasets": len(datasets)}

        def watchdog() -> None:
            while True:
                time.sleep(1.0)
                o, since = IN_FLIGHT
                if o is not None and time.perf_counter() - since > a.hang_s:
                    o.status, o.error = "hang", f"no answer after {a.hang_s:.0f} s"
                    record(o)
                    log.write(json.dumps({**summary(), "ended_by_hang": True}) + "\n")
                    log.flush()
                    if a.quiet:  # (otherwise record printed it)
                        print(o.brief()[:600], flush=True)
                    os._exit(3)

        threading.Thread(target=watchdog, daemon=True).start()
        log.write(json.dumps({"start": True, "argv": list(argv if argv is not None else sys.argv[1:]),
                              "datasets": {d.name: d.rows for d in datasets},
                              "queries": len(queries), "shapes": [s.name for s in shapes],
                              "engines": [e.name for e in engines]}) + "\n")
        log.flush()
        for shape, eng, ds in work:
            qs = [q for q in per_shape[shape] if q.schema == ds.schema and ds.has_columns_of(q)]
            if a.budget_s and time.perf_counter() - t0 > a.budget_s:
                for q in qs:
                    record(Outcome(q.id, ds.name, shape.name, eng.name, "skipped", q.sql))
                continue
            t1 = time.perf_counter()
            res = run_queries(qs, ds, shape, eng, workdir, refs, record)
            if not a.quiet:
                bad = sum(o.status != "ok" for o in res)
                print(f"{shape.name} {eng.name} {ds.name}: {len(res)} queries, {bad} not ok, "
                      f"{time.perf_counter() - t1:.1f}s", flush=True)
        final = summary()
        log.write(json.dumps(final) + "\n")
    print(json.dumps(final), flush=True)
    if a.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if final["mismatches"] == 0 and counts["skipped"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
