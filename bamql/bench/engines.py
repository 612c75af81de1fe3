"""The engines the harness compares, each answering the same query on the same data.

Every engine returns rows (list of tuples) and what it moved; the harness checks answers
against each other before times count. Engines whose packages are missing say why in one
line (``unavailable``) and are skipped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from bamql.fused import ir


@dataclass
class Data:
    """One benchmark dataset: ORC files, a Parquet copy and page stores by page size."""

    rows: int
    share: float
    orc: list[Path]
    parquet: Path  # a glob over the Parquet copy's files (DuckDB's read_parquet takes it)
    stores: dict[int, Path]
    #: a copy sorted by the stores' clustering keys (``harness.sorted_parquet``), when made
    parquet_sorted: Path | None = None


@dataclass
class Run:
    """One timed run of one query on one engine."""

    seconds: float
    rows: list[tuple]
    bytes_read: int | None = None
    whole_bytes: int | None = None
    bytes_needed: int | None = None
    extra: dict = field(default_factory=dict)


class Engine:
    """Base: ``unavailable()`` says why it cannot run here (None if it can)."""

    name = ""
    modes = ("warm", "cold")

    def unavailable(self) -> str | None:
        return None

    def open(self, data: Data, page_size: int) -> None:
        self.data, self.page_size = data, page_size

    def run(self, sql: str, q: ir.Query, mode: str) -> Run:
        raise NotImplementedError

    def close(self) -> None:
        pass


class BamqlEngine(Engine):
    """bamql on the CPU (``bamql-cpu``) or the GPU (``bamql-gpu-host``, ``bamql-gpu-gpu``,
    ``bamql-gpu-file``). Warm and cold GPU runs start from an empty GPU cache."""

    def __init__(self, device: str, backend: str | None = None, medium: str | None = None,
                 name: str | None = None) -> None:
        self.device, self.backend, self.medium = device, backend, medium
        self.name = name or ("bamql-cpu" if device == "cpu" else f"bamql-gpu-{backend}")
        self.modes = (("warm", "cold") if device == "cpu" else ("warm", "cold") if backend == "file"
                      else ("warm", "hot"))
        self.con = None

    def unavailable(self):
        if self.device == "cpu":
            return None
        from bamql.api.session import gpu_unavailable_reason

        return gpu_unavailable_reason()

    def open(self, data, page_size):
        from bamql.api.connection import connect

        super().open(data, page_size)
        self.close()
        self.con = connect(data.stores[page_size], device=self.device, backend=self.backend,
                           medium=self.medium)

    def run(self, sql, q, mode):
        if self.device != "cpu" and mode in ("warm", "cold"):
            self.con.gpu.clear_cache()  # every needed byte crosses PCIe again
        t0 = time.perf_counter()
        res = self.con.sql(sql)
        st = res.stats
        if q is None or st is None:  # a plan-tree query: its whole call, operators included
            return Run(time.perf_counter() - t0, res.rows())
        return Run(st.seconds, res.rows(), st.bytes_read, st.whole_bytes, st.bytes_needed,
                   {"compile_s": st.compile_seconds, "kernel_s": st.kernel_seconds,
                    "rows_matched": st.rows_matched,
                    "amplification": st.amplification, "cache_hits": sum(
                        c.cache_hits for c in st.columns.values()),
                    "io_reads": st.io_reads, "io_depth": st.io_depth,
                    "paths": {n: c.path for n, c in st.columns.items()}})

    def close(self):
        if self.con is not None:
            self.con.close()
            self.con = None


def needed_columns(q: ir.Query | ir.RowQuery | None) -> list[str]:
    """The table columns a query reads (its filter's too), sorted."""
    if q is None:
        raise NotImplementedError("a query through the plan tree (no column list)")
    if isinstance(q, ir.RowQuery):  # its columns are the output's and the order's
        return sorted({*q.columns, *ir.columns_of(q.predicate)})
    return sorted(q.columns)


class DuckDbEngine(Engine):
    """DuckDB over a zstd Parquet copy of the same rows (the CPU reference);
    ``duckdb-sorted`` over a copy sorted by the clustering keys (``bench --cluster-by``),
    which DuckDB's row-group statistics prune as bamql's zone maps prune a clustered store."""

    def __init__(self, sort: bool = False) -> None:
        self.sort = sort
        self.name = "duckdb-sorted" if sort else "duckdb"

    def unavailable(self):
        try:
            import duckdb  # noqa: F401
        except ImportError:
            return "duckdb is not installed"
        return None

    def open(self, data, page_size):
        import duckdb

        super().open(data, page_size)
        self.con = duckdb.connect()
        self.con.execute("SET error_on_division_by_zero=false")

    def run(self, sql, q, mode):
        t0 = time.perf_counter()
        src = self.data.parquet_sorted if self.sort else self.data.parquet
        if src is None:
            raise NotImplementedError("no sorted Parquet copy (bench --cluster-by makes it)")
        rows = self.con.sql(sql.replace("FROM trips", f"FROM read_parquet('{src}')")).fetchall()
        return Run(time.perf_counter() - t0, rows)


class PyarrowWholeEngine(Engine):
    """Whole-column reading on the CPU: pyarrow reads the needed ORC columns, DuckDB
    filters and aggregates them in memory."""

    name = "pyarrow-whole"

    def unavailable(self):
        return DuckDbEngine().unavailable()

    def run(self, sql, q, mode):
        import duckdb
        import pyarrow as pa
        import pyarrow.orc as paorc

        t0 = time.perf_counter()
        t = pa.concat_tables(paorc.read_table(str(p), columns=needed_columns(q)) for p in self.data.orc)
        con = duckdb.connect()
        con.execute("SET error_on_division_by_zero=false")
        con.register("trips", t)
        rows = con.sql(sql).fetchall()
        return Run(time.perf_counter() - t0, rows, extra={"decoded_bytes": t.nbytes})


class RapidsEngine(Engine):
    """RAPIDS cuDF as its users write it: read the needed ORC columns whole, filter, aggregate.
    ``rapids-stripes`` passes ``filters=`` so cuDF prunes stripes by their statistics;
    ``rapids-resident`` keeps every column it has read in GPU memory and times the query
    alone (cuDF's best case: a table already on the GPU)."""

    def __init__(self, stripes: bool = False, resident: bool = False) -> None:
        self.stripes, self.resident = stripes, resident
        self.name = "rapids-resident" if resident else "rapids-stripes" if stripes else "rapids"
        if resident:
            self.modes = ("warm", "hot")
        self.columns: dict = {}

    def open(self, data, page_size):
        super().open(data, page_size)
        self.columns = {}

    def close(self):
        self.columns = {}

    def _resident(self, q: ir.Query):
        """The query's columns from GPU memory, read there (untimed) on their first use."""
        import cudf

        missing = [c for c in needed_columns(q) if c not in self.columns]
        if missing:
            got = cudf.read_orc([str(p) for p in self.data.orc], columns=missing)
            self.columns.update({c: got[c] for c in missing})
        return cudf.DataFrame({c: self.columns[c] for c in needed_columns(q)})

    def unavailable(self):
        try:
            import cudf  # noqa: F401
        except Exception as e:  # ImportError, or a CUDA error at import
            return f"cudf is not usable ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
        return None

    def run(self, sql, q, mode):
        import cudf

        from bamql.bench.rapids import dnf_filters, run_query

        if q is None:
            return self._tree(sql)
        if self.resident:
            df = self._resident(q)
            t0 = time.perf_counter()
            rows = run_query(df, q)
            return Run(time.perf_counter() - t0, rows)
        t0 = time.perf_counter()
        files = [str(p) for p in self.data.orc]
        f = dnf_filters(q) if self.stripes else None
        if f:
            # cuDF (26.10) fails with filters= over a list of files ("Invalid stripe
            # index"); per file it works
            df = cudf.concat([cudf.read_orc(x, columns=needed_columns(q), filters=f) for x in files])
        else:
            df = cudf.read_orc(files, columns=needed_columns(q))
        rows = run_query(df, q)
        return Run(time.perf_counter() - t0, rows)


    def _tree(self, sql: str) -> Run:
        """A plan-tree query through its hand-written cuDF version (``rapids.TREE``)."""
        import cudf

        from bamql.bench.rapids import tree_query

        spec = tree_query(sql)
        if spec is None:
            raise NotImplementedError("no cuDF version of this query through the plan tree")
        cols, fn = spec
        if self.resident:
            missing = [c for c in cols if c not in self.columns]
            if missing:
                got = cudf.read_orc([str(p) for p in self.data.orc], columns=missing)
                self.columns.update({c: got[c] for c in missing})
            df = cudf.DataFrame({c: self.columns[c] for c in cols})
            t0 = time.perf_counter()
            rows = fn(df)
            return Run(time.perf_counter() - t0, rows)
        t0 = time.perf_counter()
        df = cudf.read_orc([str(p) for p in self.data.orc], columns=list(cols))
        rows = fn(df)
        return Run(time.perf_counter() - t0, rows)


def all_engines() -> dict[str, Engine]:
    """Every engine the harness knows, by name."""
    es = [BamqlEngine("cpu"), BamqlEngine("gpu", "host"), BamqlEngine("gpu", "gpu"),
          BamqlEngine("gpu", "file"),
          # the file backend with every dependent column gathered through the queue
          BamqlEngine("gpu", "file", medium="cached", name="bamql-gpu-file-gather"),
          # the file backend planned for host-side zstd decompression (as without nvCOMP)
          BamqlEngine("gpu", "file", medium="queue", name="bamql-gpu-file-queue"),
          RapidsEngine(), RapidsEngine(stripes=True), RapidsEngine(resident=True),
          DuckDbEngine(), DuckDbEngine(sort=True),
          PyarrowWholeEngine()]
    return {e.name: e for e in es}
