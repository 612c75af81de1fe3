"""Sessions: open tables, pick the device, plan and run queries, keep caches between them."""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from bamql.api.file_tables import FileTables
from bamql.api.zones import Deferred, zones_dimension
from bamql.config import Backend, Config, Device, Medium
from bamql.errors import DeviceError, PlanError, StoreError, UsageError
from bamql.exec.leaves import KernelAggregate, Leaf, lower
from bamql.exec.partition import Resident, page_cache, plan_partition, table_domains
from bamql.exec.quantiles import kernel_query
from bamql.exec.result import Result
from bamql.exec.runner import LocalRunner, Runner
from bamql.fused import ir
from bamql.lru import LRU
from bamql.physical.cost import reads_page_cache
from bamql.physical.planning import PhysicalPlan
from bamql.sql.dimensions import Dimension, dimension
from bamql.sql.distinct import split_distinct
from bamql.sql.grouping import check_hashed, hashed
from bamql.sql.joins import JoinQuery, translate_joins
from bamql.sql.params import Params, bind
from bamql.sql.statements import catalog_query
from bamql.storage.partitioned import PartitionedTable, is_table, open_table

if TYPE_CHECKING:  # files named in FROM, the plan tree: imported where a query needs them
    from bamql.storage.filecache import ProgressFactory
    from bamql.storage.inplace import ReadPlan

_EXPLAIN = re.compile(r"^\s*explain\s+(analyze\s+)?", re.IGNORECASE)
#: the one-row table a SELECT without FROM reads (``SELECT 1``), as DuckDB's has one row
_ONE_ROW = "bamql_one_row"
#: A stored table of at most this many rows joined to another is read once into memory and
#: joined as a dimension table: the join then runs inside the fact table's fused kernel.
STORED_DIMENSION_ROWS = 1_000_000
def gpu_unavailable_reason() -> str | None:
    """None if the GPU engine can run here, else why not (one line)."""
    from bamql.gpu.device import gpu_available

    return gpu_available()


class Session(FileTables):
    """A connection to a directory of tables (or one table directory), or to none: files
    named in FROM are served either way.

    Thread-safe: queries from many threads share the stores and the compiled kernels.
    """

    def __init__(self, path: str | os.PathLike | None = None, device: str = "auto",
                 backend: str | None = None, cache: int | str | None = None,
                 medium: str | None = None, cluster=None, page_size: int | str | None = None,
                 config: Config | None = None, cache_files: bool | None = None) -> None:
        """Open the tables under ``path`` with ``config``, or with a Config made from the
        keywords and the ``BAMQL_*`` variables (see :func:`connect`)."""
        self._closed = False
        #: files named in FROM: their tables by name (``files_<list>_<version>``) and the
        #: EXPLAIN line of each
        self._files: dict[str, PartitionedTable] = {}
        self._file_notes: dict[str, str] = {}
        #: a file table's name -> the FROM text that named its files, for error messages
        self._file_labels: dict[str, str] = {}
        #: the CLI's progress bars for the ingest of files named in FROM; None: silent
        self.file_progress: ProgressFactory | None = None
        self.stores: dict[str, PartitionedTable] = {}
        if path is not None and (not isinstance(path, (str, os.PathLike))
                                 or isinstance(os.fspath(path), bytes)):
            raise UsageError(f"connect() takes a directory path (str or pathlib.Path), not "
                             f"{type(path).__name__}")
        if config is not None and (device != "auto" or any(
                v is not None for v in (backend, cache, medium, cluster, page_size, cache_files))):
            raise UsageError("pass a session's settings as keywords or as config=, not both")
        if config is None:
            config = Config.from_env(device=device, backend=backend, cache=cache, medium=medium,
                                     cluster=cluster, page_size=page_size,
                                     cache_files=cache_files)
        #: files read in place: (files, version, read spec) -> their table's name and store
        self._in_place: dict[tuple, tuple[str, Path]] = {}
        self._in_place_swept = False  # the dead processes' directories removed (once)
        self.config = config
        self.path = Path(path) if path is not None else None
        self.medium = config.medium  # the cost model's medium; None: the backend's
        opening = None
        if self.path is not None and config.device == Device.CPU:
            self.stores = self._open_tables(config.page_size)
        elif self.path is not None:
            # on a thread beside the CUDA start: the store's metadata read and its digest
            # checked (I/O and hashing, which release the GIL) while numba-cuda imports and
            # the CUDA context is made, the two longest steps of a GPU session's start
            pool = ThreadPoolExecutor(1, thread_name_prefix="bamql-open")
            opening = pool.submit(self._open_tables, config.page_size)
            pool.shutdown(wait=False)
        self.cluster = None
        self._dask: Runner | None = None
        # a client this session made (from an address or "local-gpus") is closed with it
        self._own_cluster = False
        self._lock = threading.Lock()
        # bounded, least recently used first out: one session can run any number of queries
        self._parsed: LRU = LRU(256)  # SQL text -> IR
        #: (SQL text, the stored tables) of queries that name no file and no registered
        #: table: ``_bind_files`` leaves them as they are without parsing them again
        self._plain: LRU = LRU(256)
        self._registered_gen = 0  # counts register() and unregister() calls (``_plain``)
        #: registered tables no store can hold, as (name, register() count): read by the tree
        self._unstorable: set[tuple[str, int]] = set()
        #: small stored tables read whole to be joined as dimension tables (``_dims_for``)
        self._stored_dims: dict[str, Dimension] = {}
        self._plans: LRU = LRU(256)  # (IR, medium) -> plan of the table's first partition
        self._explained: LRU = LRU(256)
        self.note = ""
        self.gpu = None
        try:
            self.gpu = self._gpu_engine(config)
        except BaseException:
            if opening is not None:  # a table's error first, as where the tables open first
                for table in opening.result().values():
                    table.close()
            raise
        if opening is not None:
            try:
                self.stores = opening.result()
            except BaseException:
                if self.gpu is not None:
                    self.gpu.close()
                    self.gpu = None
                raise
        #: registered dimension tables by name (``register``): a stored table's name wins
        self.dimensions: dict[str, Dimension] = (
            {} if "zones" in self.stores else {"zones": Deferred("zones", zones_dimension)})
        self.device = Device.GPU if self.gpu is not None else Device.CPU
        if self.note:  # the CLI prints it; a program sees it through logging
            logging.getLogger("bamql").info(self.note)
        self.backend = self.gpu.backend.kind if self.gpu is not None else Backend.FILE
        self._local = LocalRunner(self.device, self.backend, self.gpu)
        if config.cluster is not None:
            try:
                from bamql.exec.distributed import DaskRunner, connect_cluster
            except ModuleNotFoundError as e:  # Dask is optional
                if e.name not in ("dask", "distributed"):
                    raise
                self.close()
                raise UsageError("Dask is not installed; pip install 'bamql[dask]'") from None
            try:
                self.cluster = connect_cluster(config.cluster)
            except BaseException:
                self.close()  # the GPU engine and the tables opened so far
                raise
            self._own_cluster = self.cluster is not config.cluster
            gpu = self.gpu
            self._dask = DaskRunner(self.cluster, self.device, self.backend,
                                    gpu.cache_bytes if gpu is not None else None,
                                    config.dask_dispatch)

    def _open_tables(self, page_size: int | None) -> dict[str, PartitionedTable]:
        """The tables under ``self.path`` by name, each of ``page_size`` B pages if given
        (a table's page size is set when it is ingested)."""
        if not self.path.exists():
            raise StoreError(f"{self.path} does not exist")
        if is_table(self.path):
            dirs = [self.path]
        else:
            dirs = sorted(d for d in self.path.iterdir()
                          if d.is_dir() and not d.name.startswith(".") and is_table(d))
            if not dirs:
                raise StoreError(f"{self.path} holds no bamql tables (run `bamql ingest` first)")
        stores: dict[str, PartitionedTable] = {}
        for d in dirs:
            s = open_table(d)
            stores[s.name] = s
        for s in stores.values() if page_size is not None else ():
            if s.page_size != page_size:
                raise StoreError(f"table {s.name!r} has {s.page_size} B pages, not {page_size}: "
                                 f"the page size is set at ingest (bamql ingest --page-size "
                                 f"{page_size})")
        return stores

    def _gpu_engine(self, config: Config):
        """The GPU engine ``config.device`` asks for and this machine runs, else None (the
        CPU engine; ``self.note`` says why where the user did not ask for the CPU)."""
        device, backend, gpu = config.device, config.backend, None
        if device in (Device.AUTO, Device.GPU):
            why = gpu_unavailable_reason()
            # asked for by name, numba's CUDA simulator runs the GPU engine (CI, tiny tables);
            # "auto" never picks it
            from bamql.gpu.device import SIMULATOR

            simulated = why is not None and device == Device.GPU and SIMULATOR
            if why is None or simulated:
                from bamql.gpu.engine import GpuEngine

                gpu = GpuEngine(config)
                if simulated:
                    self.note = "numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1): slow, for tests"
            elif device == Device.GPU:
                raise DeviceError(f"no usable GPU: {why}")
            else:
                self.note = f"using the CPU engine (no usable GPU: {why})"
        if gpu is None and backend not in (None, Backend.FILE):
            if device == Device.CPU:
                raise DeviceError(f"backend {backend.value!r} needs device='gpu'; the CPU engine "
                                  "reads files")
            self.note += f"; backend {backend.value!r} ignored: the CPU engine reads the volume files"
        return gpu

    # -- catalog -------------------------------------------------------------------------
    def tables(self) -> list[str]:
        """Names of the tables in this session."""
        return sorted(self.stores)

    def store(self, table: str) -> PartitionedTable:
        """A table by name: its partitions (one, for a table of one store) and the whole
        table's columns."""
        try:
            return self.stores[table] if table in self.stores else self._files[table]
        except KeyError:
            raise PlanError(f"unknown table {table!r} (tables: {', '.join(self.tables())})") from None

    def schema(self, table: str) -> pa.Schema:
        """The logical Arrow schema of a table."""
        from bamql.storage.decimals import sql_arrow_type

        s = self.store(table)
        types = {"int": pa.int64(), "float": pa.float64(), "timestamp": pa.timestamp("us"),
                 "string": pa.string()}
        fields = []
        for c in s.columns.values():
            t = pa.float32() if c.dtype == "float32" else types[c.kind]
            if c.sql_type is not None:  # a DECIMAL or BOOLEAN held as integers
                t = sql_arrow_type(c.sql_type) or t
            meta = {"storage": c.dtype, "pages": str(c.n_pages)}
            if c.scale:
                meta["scale"] = str(c.scale)
            if c.bits:
                meta["bits"] = str(c.bits)
            if c.name in s.value_sets:
                meta["value_sets"] = "yes"
            fields.append(pa.field(c.name, t, metadata=meta))
        return pa.schema(fields)

    def register(self, name: str, table) -> None:
        """Register a small in-memory table under ``name``, to be joined to stored tables
        as a dimension table (``... JOIN name d ON t.column = d.key``).

        Parameters
        ----------
        name
            The table's name in SQL; a stored table of that name is an error.
        table
            A pyarrow Table, a pandas or polars DataFrame, or anything with
            ``__arrow_c_stream__`` (read with ``pyarrow.table``).
        """
        self._check_open()
        if not isinstance(name, str) or not name.isidentifier():
            raise UsageError(f"a table's name is an identifier such as 'zones', not {name!r}")
        if name in self.stores:
            raise UsageError(f"{name!r} is a stored table of this session; register the table "
                             "under another name")
        try:
            dim = dimension(name, table)
        except PlanError as e:
            raise UsageError(str(e)) from None
        with self._lock:
            self.dimensions[name] = dim
            self._parsed.clear()  # a join's key sets are computed when it is translated
            self._plain.clear()  # a FROM of that name now reads the registered table
            self._registered_gen += 1

    def unregister(self, name: str) -> None:
        """Forget the table registered as ``name`` (DuckDB's ``unregister``); a name that
        is not registered is an error."""
        self._check_open()
        with self._lock:
            if name not in self.dimensions or name == _ONE_ROW:
                known = ", ".join(sorted(n for n in self.dimensions if n != _ONE_ROW)) or "none"
                raise UsageError(f"no table is registered as {name!r} (registered: {known})")
            del self.dimensions[name]
            self._parsed.clear()
            self._plain.clear()
            self._registered_gen += 1
            self._explained.clear()

    def catalog(self) -> dict:
        return {name: s.columns for name, s in (*self._files.items(), *self.stores.items())}

    # -- queries -------------------------------------------------------------------------
    def plan(self, q: ir.Query, resident: Resident | None = None) -> PhysicalPlan:
        """The physical plan of the table's first partition (its only one, for a table of
        one store), with the whole table's group-key domains; ``resident``: what the OS
        page cache holds of it (None: looked up here)."""
        medium = self._medium()
        if resident is None:
            resident = self._resident(KernelAggregate(q))
        key = (q, medium, resident)
        p = self._plans.get(key)
        if p is None:  # an open store's metadata does not change: plans can be reused
            table, kq = self.store(q.table), kernel_query(q)  # quantiles beside the kernel
            p = plan_partition(table.parts[0], kq, table_domains(kq, table.columns), medium,
                               resident)
            self._plans.put(key, p)
        return p

    def _runner(self, table: PartitionedTable) -> Runner:
        """Where ``table``'s partitions run: a partitioned table on the cluster if there is
        one, anything else in this process (a table of one store is opened here)."""
        return self._dask if self._dask is not None and table.partitioned else self._local

    def _medium(self) -> Medium:
        """The cost model's medium: the user's, else the backend's."""
        if self.medium:
            return Medium(self.medium)
        return self.gpu.backend.medium if self.gpu is not None else Medium.FILE

    def _check_open(self) -> None:
        """A clean error for a session used after :meth:`close`."""
        if self._closed:
            on = f" on {self.path}" if self.path is not None else ""
            raise UsageError(f"the session{on} is closed; connect() again to query it")

    @staticmethod
    def _check_text(text) -> None:
        if not isinstance(text, str):
            raise UsageError(f"a query is SQL text (str), not {type(text).__name__}")

    def sql(self, text: str, params: Params = None) -> Result:
        """Run a query (or EXPLAIN / EXPLAIN ANALYZE of one); returns a Result.

        ``params`` binds the query's placeholders, as DuckDB does: a list or tuple for
        ``?`` or ``$1``, a dict for ``$name`` or ``:name`` (see ``bamql.sql.params``).
        """
        self._check_text(text)
        self._check_open()
        cq = catalog_query(text)
        if cq is not None:  # SHOW TABLES, DESCRIBE ...
            from bamql.exec.describe import describe

            return describe(self, cq, params)
        m = _EXPLAIN.match(text)
        body = text[m.end():] if m else text
        bound = self._without_from(bind(body.strip().rstrip(";"), params))
        if m and not m.group(1):
            txt = self._explain(bound)
            return Result(pa.table({"explain": txt.splitlines()}), None, txt, is_explain=True)
        text = self._bind_files(bound)
        from bamql.exec.tree import execute

        try:
            res = execute(self, text)
        except PlanError as e:  # a SELECT without FROM reads a table the user never named
            if _ONE_ROW not in bound:
                raise
            raise PlanError(str(e).replace(f" in table '{_ONE_ROW}'", " (the query has no FROM)")
                            .split(" at line ")[0]) from None
        if m:
            txt = res.explain()
            return Result(pa.table({"explain": txt.splitlines()}), res.stats, res.plan_text,
                          is_explain=True)
        return res

    def explain(self, text: str, params: Params = None) -> str:
        """The EXPLAIN text of a query (``params`` as for :meth:`sql`)."""
        self._check_text(text)
        self._check_open()
        return self._explain(self._without_from(bind(text.strip().rstrip(";"), params)))

    def _explain(self, text: str) -> str:
        """The EXPLAIN text of ``text`` (parameters bound): over files this session has not
        read in place, what the read would take, from their metadata alone (no data read;
        the physical plan is made over what the read keeps: EXPLAIN ANALYZE shows it)."""
        from bamql.exec.tree import plan as tree_plan
        from bamql.exec.tree import show as show_tree
        from bamql.exec.tree import tree_worthy
        from bamql.storage.files import FileSet
        from bamql.storage.inplace import ReadSpec, plan_in_place

        planned: dict[str, tuple[ReadPlan, str]] = {}

        def table_for(ref) -> str:
            if self.config.cache_files:
                return self._file_table(ref)
            files = FileSet.resolve(ref.specs, ref.format, ref.hive, ref.filters, ref.options)
            hit = self._in_place_hit(files, ref)
            if hit is not None:  # read already: its plan costs nothing
                return hit
            name = f"{files.table_name}_{len(planned)}"
            planned[name] = (plan_in_place(files, ReadSpec(ref.names, ref.filters)),
                             ", ".join(f"'{x}'" for x in ref.specs))
            return name

        from bamql.sql.file_refs import bind_files

        bound = bind_files(text, self.stores, table_for, self._registered_table)
        if not planned:
            return show_tree(tree_plan(self, bound), self)
        from bamql.exec.fileplan import explain_planned

        try:
            return explain_planned(bound, planned, self.catalog(), self.dimensions)
        except PlanError as e:  # the plan tree's EXPLAIN reads the files' metadata in place
            if not tree_worthy(e):
                raise
            return show_tree(tree_plan(self, self._bind_files(text), refused=e), self)

    def _translate(self, text: str) -> ir.Query:
        """SQL -> IR, remembered per text: the catalog of an open session does not change
        and IR nodes are immutable, so a repeated query skips parsing."""
        q = self._parsed.get(text)
        if q is None:
            try:
                q = _quantiles_alone(split_distinct(
                    translate_joins(text, self.catalog(), self._dims_for(text)), self.catalog()))
            except PlanError as e:  # name files as the query did, not by their table's name
                from bamql.exec.fileplan import relabel

                msg = self._every_table(relabel(str(e), self._file_labels))
                if msg == str(e):
                    raise
                raise PlanError(msg) from None
            self._parsed.put(text, q)
        return q

    def _translate_with(self, text: str, tables: dict[str, pa.Table]) -> ir.Query:
        """SQL -> IR where ``text`` may also join ``tables`` (name -> rows), dimension tables
        of this one query (a plan's derived tables, computed already); not remembered."""
        dims = {**self._dims_for(text), **{k: dimension(k, t) for k, t in tables.items()}}
        return _quantiles_alone(split_distinct(translate_joins(text, self.catalog(), dims),
                                               self.catalog()))

    def _every_table(self, msg: str) -> str:
        """An unknown-table error's list of tables as every name a query may use: stored
        and registered tables alike."""
        names = sorted({*self.stores, *(n for n in self.dimensions if n != _ONE_ROW)})
        return re.sub(r"\(tables: [^)]*\)", f"(tables: {', '.join(names) or 'none'})", msg)

    def _dims_for(self, text: str) -> dict[str, Dimension]:
        """The dimension tables ``text`` may join: the registered ones, and each small stored
        table it joins to another (read whole once: ``STORED_DIMENSION_ROWS``)."""
        if not re.search(r"\bjoin\b", text, re.IGNORECASE):
            return self.dimensions
        import sqlglot
        from sqlglot import exp

        try:
            tree = sqlglot.parse_one(text, read="duckdb")
        except sqlglot.errors.SqlglotError:
            return self.dimensions
        dims = dict(self.dimensions)
        for j in tree.find_all(exp.Join):
            t = j.this
            if not isinstance(t, exp.Table) or t.name in dims or t.name not in self.stores:
                continue
            if self.stores[t.name].rows > STORED_DIMENSION_ROWS:
                continue
            with self._lock:
                hit = self._stored_dims.get(t.name)
            if hit is None:
                rows = self.run(self._translate(
                    f"SELECT * FROM {exp.to_identifier(t.name, quoted=True).sql(dialect='duckdb')}"))
                hit = dimension(t.name, rows.table)
                with self._lock:
                    self._stored_dims[t.name] = hit
            dims[t.name] = hit
        return dims

    def _resident(self, leaf: Leaf) -> Resident:
        """What the OS page cache holds of the columns a fused leaf's plan reads in the
        table's first partition, looked up once per query and shared by its plan and its
        EXPLAIN text; () where the medium's plans do not depend on it."""
        medium = self._medium()
        if not reads_page_cache(medium):
            return ()
        cols = leaf.reads()
        if not cols:
            return ()
        return page_cache(self.store(leaf.fact.table).parts[0], tuple(dict.fromkeys(cols)),
                          medium)

    def explain_query(self, q: ir.Query | JoinQuery, resident: Resident | None = None) -> str:
        """The EXPLAIN text of a logical query (a partitioned table's: of its first
        partition, after a line on the partitions and where they run); a join's starts
        with what each join became. ``resident``: what the OS page cache holds of the
        first partition (None: looked up here), the one input its text and plan share."""
        if isinstance(q, JoinQuery):
            return "\n".join((*q.steps, self.explain_query(q.fact, resident)))
        table = self.store(q.table)
        runner = self._runner(table)
        leaf = lower(self, q)
        if resident is None:  # the plan, and so its text, follows what the OS page cache holds
            resident = self._resident(leaf)
        key = (q, self._medium(), runner.where, resident)
        txt = self._explained.get(key)
        if txt is None:  # made once: every query's result carries it
            if leaf.local():
                runner = self._local
            txt = leaf.explain(self, resident)
            if table.partitioned:
                txt = (f"{len(table.parts)} partitions of {table.rows:,} rows, run "
                       f"{runner.place}; partition 1:\n" + txt)
            if q.table in self._file_notes:
                txt = self._file_notes[q.table] + "\n" + txt
            self._explained.put(key, txt)
        return txt

    def _without_from(self, text: str) -> str:
        """``text``, or where it is a SELECT without FROM (``SELECT 1``), the same over a
        table of one row and no column a query can name, as DuckDB answers it."""
        if re.search(r"\bfrom\b", text, re.IGNORECASE):
            return text
        import sqlglot
        from sqlglot import exp

        try:
            tree = sqlglot.parse_one(text, read="duckdb")
        except sqlglot.errors.SqlglotError:
            return text  # the translator words the error
        if not isinstance(tree, exp.Select) or tree.args.get("from") or tree.args.get("from_") \
                or any(isinstance(e, exp.Star) for e in tree.expressions):
            return text  # SELECT * names the one-row table's columns: "needs FROM" instead
        if _ONE_ROW not in self.dimensions:
            with self._lock:
                self.dimensions.setdefault(_ONE_ROW, dimension(_ONE_ROW, pa.table(
                    {"bamql_row": pa.array([0], pa.int8())})))
        return tree.from_(_ONE_ROW).sql(dialect="duckdb")

    def execute(self, text: str, params: Params = None) -> Result:
        """Run a query, as ``sql`` does (DuckDB's name for it)."""
        return self.sql(text, params)

    def run(self, query: ir.Query | JoinQuery) -> Result:
        """Plan and run a fused leaf's logical query through its physical operator
        (``exec.leaves``): the table's partitions through its runner, their partial
        aggregates merged (a join's regrouped by its dimension columns)."""
        self._check_open()
        return lower(self, query).run(self)

    def _hashed(self, q) -> bool:
        """Whether ``q`` is a GROUP BY for the hash-aggregation step (``sql.grouping``);
        what that step does not compute is refused here."""
        if not isinstance(q, ir.Query) or not hashed(q, self.store(q.table).columns):
            return False
        check_hashed(q)
        return True

    def table(self, name: str):
        """A dataframe-like handle on a table (see bamql.api.frame)."""
        from bamql.api.frame import Frame

        self._check_open()
        self.store(name)
        return Frame(self, name)

    def close(self) -> None:
        """Close the tables and free device memory; later queries are a clean error."""
        self._closed = True
        if self.gpu is not None:
            self.gpu.close()
            self.gpu = None
        for s in (*self.stores.values(), *getattr(self, "_files", {}).values()):
            s.close()
        with getattr(self, "_lock", threading.Lock()):
            for key in list(getattr(self, "_in_place", ())):
                self._drop_in_place(key)
        dask = getattr(self, "_dask", None)
        if dask is not None and hasattr(dask, "close"):
            dask.close()  # its workers' actors released: Dask may retire those workers
        if getattr(self, "_own_cluster", False):
            cluster = getattr(self.cluster, "cluster", None)
            self.cluster.close()
            if cluster is not None:
                cluster.close()
            self._own_cluster = False

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _quantiles_alone(q):
    """A join query with quantiles as the query over the fact table it is when its groups
    do not move (a join that only filters); quantiles over regrouped joins and with
    COUNT(DISTINCT) are refused."""
    if not isinstance(q, JoinQuery) or not ir.quantile_aggs(q.out):
        return q
    if q.distinct or q.regroups:
        raise PlanError("MEDIAN and quantiles are not supported with COUNT(DISTINCT) or "
                        "GROUP BY a joined table's column")
    return dataclasses.replace(q.out, predicate=q.fact.predicate)

