"""The GPU executor: backends (where pages come from), the session's page cache, launches.

Backends:
- ``gpu``: the whole store resident in GPU memory (the upper bound).
- ``host``: the store in pinned, mapped host memory; the GPU reads it itself over PCIe
  (zero copy): stage-1 predicate columns directly and coalesced, every other column
  through the page cache, whose misses the warp copies from host memory.
- ``file``: the store stays in its volume files. Cache misses are GPU-initiated reads: the
  warp puts a command on a submission queue in mapped host memory (BaM's ticket/turn
  protocol), host I/O workers (``storage.queues``) read the page into the warp's pinned
  staging page and post a completion, and the warp copies staging into the cache slot.
  Columns the plan streams (stage-1 predicates, and dependent columns where the cost model
  finds a sequential read cheaper than random reads) are read by the host in large
  sequential reads into pinned mapped buffers that the kernel reads directly.

The cache (per table, ``cache`` bytes) lives as long as the session, so a repeated query
hits in GPU memory; predicate columns scanned whole are kept on the GPU too when they fit.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from bamql.config import AccessPath, Backend, Config, Role
from bamql.engine import accumulate
from bamql.engine.stats import QueryStats
from bamql.errors import DeviceError, StoreError
from bamql.kernels import gpu as kgpu
from bamql.lru import LRU
from bamql.planner import ir
from bamql.planner.physical import PhysicalPlan
from bamql.storage.store import PageStore

_DTYPES = ("int8", "int16", "int32", "int64", "float32", "float64")


def _typed(base, dtype, byte_offset: int = 0, count: int | None = None, shape=None):
    """A typed (C-ordered) device array over part of a uint8 device or mapped buffer, no copy."""
    dt = np.dtype(dtype)
    if count is None:
        count = (base.size - byte_offset) // dt.itemsize
    shape = tuple(shape or (count,))
    if not hasattr(base, "gpu_data"):  # numba's CUDA simulator: NumPy arrays underneath
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        raw = np.asarray(getattr(base, "_ary", base)).reshape(-1).view(np.uint8)
        return FakeCUDAArray(raw[byte_offset : byte_offset + count * dt.itemsize].view(dt)
                             .reshape(shape))
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    strides = tuple(int(np.prod(shape[i + 1 :])) * dt.itemsize for i in range(len(shape)))
    data = base.gpu_data.view(byte_offset, byte_offset + count * dt.itemsize)
    return DeviceNDArray(shape=shape, strides=strides, dtype=dt, gpu_data=data)


#: numba's warning for launches of under 128 blocks. Matched by its text: numba-cuda 0.30
#: raises its own ``NumbaPerformanceWarning`` class, not ``numba.core.errors``' one, so a
#: filter by class let it through to every worker's log. Where colorama is installed numba
#: wraps the text in terminal colour codes, hence the leading ``.*`` (filters match at the start).
_SMALL_GRID = r".*Grid size \d+ will likely result in GPU under-utilization"


@contextlib.contextmanager
def small_grid_ok() -> Iterator[None]:
    """A context without numba's small-grid warning: the warm-up launch is one block on
    purpose, and a query left few candidate rows by its zone maps needs only a few."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_SMALL_GRID)
        yield


def _fill(arr, value: int) -> None:
    """Set every element of an integer device array to 0 or -1: a memset on the GPU (no
    host copy)."""
    if hasattr(arr, "gpu_data"):
        from numba.cuda.cudadrv import driver

        driver.device_memset(arr, value & 0xFF, arr.nbytes)
    else:  # numba's CUDA simulator
        arr.copy_to_device(np.full(arr.size, value, arr.dtype))


def _host_view(mapped) -> np.ndarray:
    """A plain ndarray over a mapped (pinned, GPU-visible) host array, for host-side I/O."""
    if hasattr(mapped, "_ary"):  # numba's CUDA simulator wraps a NumPy array
        return mapped._ary
    return np.ndarray.view(mapped, np.ndarray)


def _pack(arrays: list[np.ndarray]) -> tuple[np.ndarray, list[int]]:
    """Lay small host arrays out in one buffer (8-byte aligned): one copy each way."""
    offs, pos = [], 0
    for a in arrays:
        offs.append(pos)
        pos += -(-a.nbytes // 8) * 8
    buf = np.zeros(max(pos, 8), np.uint8)
    for a, o in zip(arrays, offs, strict=True):
        buf[o : o + a.nbytes] = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
    return buf, offs


@dataclass
class TableState:
    """One table on the GPU: its pages (source) and its page cache."""

    name: str  # the table's name
    source: object | None  # uint8 device or mapped buffer, global page order (not ``file``)
    host: np.ndarray | None  # the mapped host buffer (host backend)
    n_slots: int
    slots: object
    state: object
    page_slot: object
    slot_page: object
    slot_lock: object
    clock: object
    resident: dict = field(default_factory=dict)  # scanned column -> device copy
    resident_bytes: int = 0
    load_seconds: float = 0.0
    reported: bool = False  # load time already charged to a query's stats
    views: tuple = ()  # typed views of the slots and the source, made once
    queue: object | None = None  # file backend: HostQueue, and its device-side words
    sq_tail: object | None = None
    warp_seq: object | None = None
    staged: tuple = ()  # file backend: staging contents and row-group layout (kernel arguments)
    colbufs: dict = field(default_factory=dict)  # file backend: column -> pinned mapped buffer
    #: id(RowRanges) -> (the ranges, their device arrays): a repeated plan's candidate ranges
    #: are laid out and copied to the GPU once
    range_arrays: dict = field(default_factory=dict)
    #: (id(plan), scan arguments) -> _Launch: a repeated plan's arguments, result buffers and
    #: prepared launch parameters, made once
    launches: dict = field(default_factory=dict)
    col_views: dict = field(default_factory=dict)  # column -> typed view of its pages
    spare: dict = field(default_factory=dict)  # column -> device buffer a cleared cache left


class _Launch:
    """One plan's launch on one table, prepared once and reused by repeated queries.

    numba's launch path types and converts each of the kernel's ~40 arguments on every
    call, and the query's small accumulators were a new device allocation each time:
    together about a millisecond per query. Here the accumulators live in one device
    buffer reset from a pinned copy of their initial values, the results come back into
    pinned memory, and after the first launch the kernel parameters numba prepared are
    kept and passed straight to ``cuda.core.launch``.
    """

    def __init__(self, plan, args: tuple, blocks: int, small: list, offs: list,
                 packed: np.ndarray, dbuf, volatile: bool, acc_names: list[str]) -> None:
        from numba import cuda

        self.plan = plan  # held so that its id is not reused while the entry lives
        self.acc_names = acc_names
        self.args = args
        self.blocks = blocks
        self.small, self.offs = small, offs
        self.dbuf = dbuf
        self.init = cuda.pinned_array(dbuf.size, np.uint8)
        self.init[:] = packed  # ``small`` as ``_pack`` laid it out at ``offs``
        self.out = cuda.pinned_array(dbuf.size, np.uint8)
        self.volatile = volatile  # its arguments include resident columns a cleared cache drops
        self.lock = threading.Lock()
        if hasattr(dbuf, "gpu_data"):  # the driver's copies, without numba's checks around them
            from numba.cuda.cudadrv import driver

            n = dbuf.nbytes
            self.reset = lambda: driver.host_to_device(dbuf, self.init, n)
            self.fetch = lambda: driver.device_to_host(self.out, dbuf, n)
        else:  # numba's CUDA simulator
            self.reset = lambda: dbuf.copy_to_device(self.init)
            self.fetch = lambda: dbuf.copy_to_host(self.out)
        self.fast = None  # () -> None: the prepared launch, once the first one went through
        self.tried = False
        self.events = (cuda.event(), cuda.event())  # the kernel's own time, on the device

    def launch(self, kern, prepared: bool = True) -> None:
        """Launch ``kern`` on this plan's arguments; after the first launch through numba,
        through the prepared launcher where ``prepared`` (``Config.gpu_prepared``)."""
        if self.fast is not None:
            self.fast()
            return
        with small_grid_ok():  # a query with few candidate rows: few blocks
            kern[self.blocks, kgpu.BLOCK](*self.args)
        if not self.tried:
            self.tried = True
            self.fast = _prepared_launch(kern, self.args, self.blocks) if prepared else None

    def results(self) -> list[np.ndarray]:
        return [self.out[o : o + a.nbytes].view(a.dtype).reshape(a.shape).copy()
                for a, o in zip(self.small, self.offs, strict=True)]


def _prepared_launch(kern, args: tuple, blocks: int):
    """A launcher with ``args`` converted once (numba's own conversion), or None where this
    numba-cuda lays its launch out otherwise (then every query takes numba's path)."""
    if not hasattr(kern, "overloads"):
        return None
    try:
        from numba.cuda import dispatcher as nd

        if len(kern.overloads) != 1:
            return None
        kobj = next(iter(kern.overloads.values()))
        params: list = []
        retr: list = []
        for t, v in zip(kobj.argument_types, args, strict=True):
            kobj._prepare_args(t, v, 0, retr, params)
        if retr or kobj.debug or kobj.cooperative:
            return None
        kw = "is_cooperative" if nd.CUDA_CORE_GE_1_0 else "cooperative_launch"
        config = nd.LaunchConfig(grid=(blocks, 1, 1), block=(kgpu.BLOCK, 1, 1), shmem_size=0,
                                 **{kw: False})
        stream = nd.driver._to_core_stream(0)
        function = kobj._codelibrary.get_cufunc().kernel
        launch = nd.launch
    except Exception:  # another numba-cuda: its own launch path still works
        return None
    return lambda: launch(stream, config, function, *params)


class GpuEngine:
    """Runs physical plans on the GPU for one session."""

    def __init__(self, session, config: Config) -> None:
        """The engine of ``session`` (None on a Dask worker) with ``config``'s backend
        (``host`` when it names none), page-cache size and launch settings."""
        from numba import cuda

        self.cuda = cuda
        self.session = session
        self.config = config
        self.backend = config.backend or Backend.HOST
        self.cache_bytes = config.cache
        self.tables: dict[str, TableState] = {}
        self._sources: dict[int, tuple] = {}  # id(plan) -> (plan, store, scan, kernel source)
        self._lock = threading.Lock()
        free, total = cuda.current_context().get_memory_info()
        self.free_at_start, self.total = free, total
        dev = cuda.get_current_device()
        name = getattr(dev, "name", "CUDA simulator")  # the simulator's device has no name
        self.name = name.decode() if isinstance(name, bytes) else name
        self.sms = getattr(dev, "MULTIPROCESSOR_COUNT", 1)
        #: kernels already launched once (compiled), held so that their ids stay theirs
        self._warmed = LRU(256)
        self._io_pool = None  # file backend: threads for the host's sequential reads
        self._run_lock = threading.Lock()
        # a cache clear and a kernel never overlap: a clear under a running kernel leaves
        # pages VALID with no slot (wrong reads) or slots no claim can take (a hang)
        self._cache_lock = threading.RLock()
        # file backend: one staging page per warp in flight, at most 256 MiB of them
        self.max_warps = self.sms * 8 * kgpu.BLOCK // 32

    # -- setting a table up ----------------------------------------------------------------
    def _table(self, store: PageStore) -> TableState:
        with self._lock:
            key = str(store.path)  # partitions of one table share its name
            ts = self.tables.get(key)
            if ts is None:
                ts = self._load(store)
                self.tables[key] = ts
            return ts

    def _load(self, store: PageStore) -> TableState:
        cuda = self.cuda
        t0 = time.perf_counter()
        m = store.manifest
        nbytes = m.total_pages * m.page_size
        free, _ = cuda.current_context().get_memory_info()
        cache = self.cache_bytes
        if cache is None:  # default: a quarter of free memory, at most 8 GiB
            cache = min(8 << 30, free // 4)
        n_slots = max(1, cache // m.page_size)
        # page states over every id, row-group copies' included (the file backend reads them)
        n_ids = m.all_pages if self.backend == Backend.FILE else m.total_pages
        if n_ids >= 2**31 - 1:  # the cache keeps page ids in int32 words
            raise DeviceError(f"table {store.name!r} has {n_ids:,} pages; the GPU page cache "
                              "holds at most 2,147,483,646: ingest it with a larger page size "
                              "or in partitions")
        resident = self.backend == Backend.GPU  # the store itself is in GPU memory
        need = n_slots * m.page_size + n_ids * 8 + (nbytes if resident else 0)
        if need > free * 0.95:
            raise DeviceError(
                f"table {store.name!r} needs {need / 2**30:.2f} GiB of GPU memory "
                f"({'store ' + format(nbytes / 2**30, '.2f') + ' GiB + ' if resident else ''}"
                f"cache {n_slots * m.page_size / 2**30:.2f} GiB) but {free / 2**30:.2f} GiB are free; "
                "use a smaller cache= or backend='host'")
        try:
            host = None
            source = None
            if self.backend == Backend.FILE:
                pass  # pages stay in the volume files until a query needs them
            elif self.backend == Backend.HOST:
                # (an empty table has no page; the driver maps no buffer of 0 bytes)
                source = cuda.mapped_array(max(nbytes, 8), dtype=np.uint8)
                # a plain ndarray over the same pinned memory, for host-side reads and views
                host = _host_view(source)
                self._read_all(store, host)
            else:
                source = cuda.device_array(nbytes, dtype=np.uint8)
                chunk = 256 << 20
                buf = cuda.pinned_array(chunk, dtype=np.uint8)
                pages = chunk // m.page_size
                for p0 in range(0, m.total_pages, pages):
                    ids = np.arange(p0, min(p0 + pages, m.total_pages))
                    view = buf[: len(ids) * m.page_size].reshape(len(ids), m.page_size)
                    store.read_pages(ids, view)
                    source[p0 * m.page_size : (p0 + len(ids)) * m.page_size].copy_to_device(
                        buf[: len(ids) * m.page_size])
            ts = TableState(
                name=store.name, source=source, host=host, n_slots=n_slots,
                slots=cuda.device_array(n_slots * m.page_size, dtype=np.uint8),
                state=cuda.to_device(np.zeros(n_ids, np.int32)),
                page_slot=cuda.to_device(np.full(n_ids, -1, np.int32)),
                slot_page=cuda.to_device(np.full(n_slots, -1, np.int32)),
                slot_lock=cuda.to_device(np.zeros(n_slots, np.int32)),
                clock=cuda.to_device(np.zeros(1, np.int64)),
            )
        except Exception as e:
            if "OUT_OF_MEMORY" in str(e).upper() or "out of memory" in str(e).lower():
                raise DeviceError(f"GPU out of memory loading table {store.name!r} "
                                  f"({nbytes / 2**30:.2f} GiB store, backend {self.backend})") from None
            raise
        ts.views = (*[_typed(ts.slots, d) for d in _DTYPES], _typed(ts.slots, np.uint64),
                    _typed(ts.source, np.uint64) if ts.source is not None else None)
        if self.backend == Backend.FILE:
            self._start_queue(ts, store)
        ts.load_seconds = time.perf_counter() - t0
        return ts

    def _start_queue(self, ts: TableState, store: PageStore) -> None:
        """The submission queue, staging pages and I/O workers of a ``file`` table."""
        from bamql.kernels.gpu_queue import THREADS_PER_STAGING
        from bamql.storage.queues import HostQueue, staging_bytes

        cuda = self.cuda
        per_warp = 32 // THREADS_PER_STAGING  # 1 on a GPU; 32 in the simulator (per thread)
        # at least one block's worth: the simulator's threads each index a staging page
        n_staging = max(32 if per_warp == 1 else kgpu.BLOCK,
                        min(self.max_warps * per_warp, (256 << 20) // staging_bytes(store)))
        # 64 reads in flight keep the disk busy (bam.md: 16 to 256 threads reach its limit);
        # fewer on small machines, where more workers than cores only take turns
        workers = min(64, 4 * (os.cpu_count() or 1))
        ts.queue = HostQueue(store, qsize=n_staging, n_staging=n_staging,
                             io_threads=workers).start(active=False)
        ts.sq_tail = cuda.to_device(np.zeros(1, np.int64))  # tickets: GPU atomics, GPU memory
        ts.warp_seq = cuda.to_device(np.zeros(n_staging, np.int64))
        # what each staging buffer holds (-1: nothing yet), and the row groups' layout
        lay = store.layout
        ts.staged = (cuda.to_device(np.full(n_staging, -1, np.int64)), cuda.to_device(lay.g_first),
                     cuda.to_device(lay.g_pages), ts.queue.stage_bytes // 8, lay.total_pages)

    def _reset_queue(self, ts: TableState, store: PageStore) -> None:
        """After a failed kernel the queue's tickets may be out of step: start afresh."""
        if ts.queue is not None:
            ts.queue.stop()
        ts.launches.clear()  # their arguments name the old queue's buffers
        self._start_queue(ts, store)

    @staticmethod
    def _read_all(store: PageStore, host: np.ndarray) -> None:
        m = store.manifest
        step = max(1, (256 << 20) // m.page_size)
        view = host[: m.total_pages * m.page_size].reshape(m.total_pages, m.page_size)
        for p0 in range(0, m.total_pages, step):
            ids = np.arange(p0, min(p0 + step, m.total_pages))
            store.read_pages(ids, view[p0 : p0 + len(ids)])

    def clear_cache(self, table: str | None = None) -> None:
        """Empty the page cache (and resident columns) of one or all tables."""
        with self._cache_lock:
            self._clear_cache(table)

    def _clear_cache(self, table: str | None) -> None:
        self.cuda.current_context()  # the memsets call the driver directly, from any thread
        for ts in self.tables.values():
            if table in (None, ts.name):
                _fill(ts.state, 0)
                _fill(ts.page_slot, -1)
                _fill(ts.slot_page, -1)
                if ts.staged:  # what the staging buffers hold counts as cached too
                    _fill(ts.staged[0], -1)
                # resident columns become spare buffers: the next full scan fills them again
                # without a new allocation; launches that read them are dropped
                ts.spare.update(ts.resident)
                ts.resident.clear()
                ts.resident_bytes = 0
                ts.launches = {k: v for k, v in ts.launches.items() if not v.volatile}
        self.cuda.synchronize()  # done before the next query's clock starts

    def _stream(self, ts: TableState, store: PageStore, c, ranges,
                compressed: bool = False) -> tuple[object, int, int]:
        """File backend: read the pages of column ``c`` that hold candidate rows into its
        pinned mapped buffer, in large sequential reads on several threads (from its zstd
        copy with ``compressed``); returns the buffer, the pages and the bytes read."""
        from concurrent.futures import ThreadPoolExecutor

        ps, rpp = store.page_size, c.rows_per_page
        buf = ts.colbufs.get(c.name)
        if buf is None:
            buf = self.cuda.mapped_array(max(c.n_pages, 1) * ps, dtype=np.uint8)
            ts.colbufs[c.name] = buf
        view = _host_view(buf)[: c.n_pages * ps].reshape(c.n_pages, ps)
        runs = zip(*(r.tolist() for r in ranges.page_runs(rpp)), strict=True)
        step = max(1, (16 << 20) // ps)
        if compressed:  # jobs of whole chunks: no chunk read or decompressed twice
            cp = store.manifest.streams.chunk_pages
            step = max(cp, step // cp * cp)
        jobs = [(i, min(i + step, p1)) for p0, p1 in runs for i in range(p0, p1, step)]
        if self._io_pool is None:
            self._io_pool = ThreadPoolExecutor(8, thread_name_prefix="bamql-stream")
        if compressed:
            read = lambda j: store.read_stream(c.name, j[0], j[1], view[j[0] : j[1]])  # noqa: E731
        else:
            read = lambda j: store.read_pages(  # noqa: E731
                np.arange(c.first_page + j[0], c.first_page + j[1]), view[j[0] : j[1]])
        nbytes = sum(self._io_pool.map(read, jobs))
        return buf, sum(b - a for a, b in jobs), nbytes

    # -- running ---------------------------------------------------------------------------
    def run(self, plan: PhysicalPlan, store: PageStore, stats: QueryStats) -> dict[str, np.ndarray]:
        """Execute ``plan`` on the GPU; fills ``stats``; returns merged accumulators."""
        if self.backend != Backend.FILE:
            return self._run(plan, store, stats)
        # file backend: one query at a time per engine. Kernels run one after another on the
        # default stream anyway; the staging pages, per-warp sequence numbers and queue
        # counters belong to one launch at a time.
        with self._run_lock:
            return self._run(plan, store, stats)

    def _run(self, plan: PhysicalPlan, store: PageStore, stats: QueryStats) -> dict[str, np.ndarray]:
        cuda = self.cuda
        # this thread's CUDA context: the prepared launch calls the driver directly, and a
        # Dask worker runs a quick query on its event loop's thread, not the one that loaded
        cuda.current_context()
        q = plan.query
        ts = self._table(store)
        ps = store.page_size
        sent = {n: c.sentinel for n, c in store.columns.items()}
        queue = self.backend == Backend.FILE
        used: list[str] = []
        for e in (q.predicate, *q.keys, *q.aggs):
            for c in ir.columns_of(e):
                if c not in used:
                    used.append(c)
        if self.backend == Backend.GPU:  # everything is in GPU memory: read it all directly
            scan = set(used)
        elif self.backend == Backend.FILE:  # what the cost model streams is read sequentially
            scan = {a.column for a in plan.access if a.path in (AccessPath.SCAN, AccessPath.STREAM)}
            if plan.stages:
                scan |= set(plan.stages[0].columns)
        else:
            scan = set(plan.stages[0].columns) if plan.stages else set()
        stats.setup_seconds = ts.load_seconds if not ts.reported else 0.0
        ts.reported = True
        # a file-backend gather through a row group reads the column's copy there (only the
        # file backend has those pages: the host and gpu backends hold the volumes alone)
        shadow = {a.column for a in plan.access if a.shadow} if queue else set()
        cols = {n: ((store.shadow[n] if n in shadow else store.column(n)).first_page,
                    store.column(n).rows_per_page, store.column(n).dtype) for n in used}
        cached = [n for n in used if n not in scan]
        cached_index = {n: i for i, n in enumerate(cached)}
        # a repeated plan on the same store has the same kernel source: made once
        hit = self._sources.get(id(plan))
        if hit is not None and hit[0] is plan and hit[1] is store and hit[2] == scan:
            src, params = hit[3], hit[4]
        else:
            src, params = kgpu.kernel_source(
                q, plan.stages, plan.key_domains, cols, sent, scan, cached_index, queue=queue,
                scales={n: c.scale for n, c in store.columns.items()})
            if len(self._sources) >= 256:
                self._sources.pop(next(iter(self._sources)))
            self._sources[id(plan)] = (plan, store, set(scan), src, params)
        # the query's time runs from here (column copies over PCIe included) to the results,
        # less the compilation
        t_start = time.perf_counter()
        kern = kgpu.compile_kernel(src)
        t_compiled = time.perf_counter()
        # candidate rows: what zone maps and value sets left, flattened by a prefix sum
        d_off, d_lo, n_ranges, d_chunks, n_chunks = self._range_arrays(ts, plan.ranges)
        total = plan.ranges.rows
        first = set(plan.stages[0].columns) if plan.stages else set()
        scan_arrays, filled = [], {}
        scan_moved = {}
        zst = {a.column: a.compressed for a in plan.access}  # streamed from the zstd copy
        disk: dict[str, int] = {}  # bytes the file backend's streams read from disk
        for n in sorted(scan):
            c = store.column(n)
            # write-through only for stage-1 columns: every candidate row is live when they are
            # read, so the device copy gets every value (later columns only the survivors')
            full = plan.ranges.is_whole(store.rows) and n in first
            arr, resident, fill, moved = self._scan_column(ts, store, c, total, full, plan.ranges,
                                                           zst.get(n, False), disk)
            scan_arrays += [arr, resident, fill]
            if fill:
                filled[n] = resident
            scan_moved[n] = moved
        key = (id(plan), tuple(a if isinstance(a, int) else id(a) for a in scan_arrays))
        ln = ts.launches.get(key)
        if ln is None or ln.plan is not plan:
            ln = self._new_launch(ts, plan, total, scan_arrays, [cols[n][0] for n in cached],
                                  filled, (d_off, d_lo, n_ranges, d_chunks, n_chunks),
                                  params.arrays())
            if len(ts.launches) >= 64:
                ts.launches.pop(next(iter(ts.launches)))
            ts.launches[key] = ln
        with ln.lock:
            try:
                if self._warmed.get(id(kern)) is not kern:
                    with small_grid_ok():  # the warm-up launch is small on purpose
                        t0 = time.perf_counter()
                        kern[1, 32](0, *ln.args[1:])  # compiles (timed apart); no rows, no effect
                        cuda.synchronize()
                    self._warmed.put(id(kern), kern)
                    stats.compile_seconds = time.perf_counter() - t0
                stats.compile_seconds += t_compiled - t_start
                t_launch = time.perf_counter()
                ln.reset()  # the accumulators' initial values
                if queue:
                    ts.queue.reset_stats()
                    ts.queue.begin()
                ev0, ev1 = ln.events
                try:
                    with self._cache_lock:  # no cache clear while the kernel runs
                        ev0.record()
                        ln.launch(kern, self.config.gpu_prepared)
                        ev1.record()
                        ln.fetch()  # synchronizes
                finally:
                    if queue:
                        ts.queue.end()
                stats.kernel_seconds = time.perf_counter() - t_launch
                # the simulator keeps no time (it answers -1)
                stats.gpu_seconds = max(0.0, ev0.elapsed_time(ev1) / 1e3)
            except Exception as e:
                msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                if queue:
                    self._reset_queue(ts, store)
                raise DeviceError(f"GPU kernel failed: {msg}") from None
            host = ln.results()
        if queue:
            stats.io_reads, stats.io_depth = ts.queue.served, ts.queue.max_in_flight
            if ts.queue.error is not None:  # pages of this query may be wrong: forget them
                err = ts.queue.error
                self._reset_queue(ts, store)
                self.clear_cache(store.name)
                raise StoreError(f"reading pages for the GPU failed: {err}") from None
        cnt = host[0]
        for n, d in filled.items():
            ts.resident[n] = d
            ts.resident_bytes += d.nbytes
        host_acc = dict(zip(ln.acc_names, host[1:], strict=True))
        for k in ("MNF", "MXF"):  # order keys back to floats
            host_acc[k] = accumulate.order_keys(host_acc[k])
        stats.seconds = time.perf_counter() - t_start - stats.compile_seconds
        stats.rows_matched = int(cnt[0])
        for n in scan:
            c = stats.columns[n]
            col = store.column(n)
            pages = -(-total // col.rows_per_page) if c.role == Role.PREDICATE else 0
            moved = scan_moved[n]  # pages that crossed PCIe now
            c.pages_read += moved
            c.bytes_read += disk.get(n, moved * ps)
            c.cache_hits += pages if moved == 0 else 0
            c.values_needed += total if c.role == Role.PREDICATE else stats.rows_matched
            c.path = (AccessPath.SCAN if c.role == Role.PREDICATE
                      else AccessPath.STREAM if queue else AccessPath.DIRECT)
        for n, i in cached_index.items():
            c = stats.columns[n]
            hits, misses = int(cnt[1 + 2 * i]), int(cnt[2 + 2 * i])
            c.cache_hits += hits
            c.cache_misses += misses
            c.pages_read += misses
            c.bytes_read += misses * ps
            c.values_needed += stats.rows_matched if c.role == Role.DEPENDENT else 0
        for n in cached:
            stats.columns[n].path = AccessPath.CACHE
        return accumulate.merge(host_acc, None)

    def _new_launch(self, ts: TableState, plan: PhysicalPlan, total: int, scan_arrays: list,
                    firsts: list[int], filled: dict, ranges: tuple,
                    params: tuple[np.ndarray, ...]) -> _Launch:
        """The arguments of ``plan``'s kernel on ``ts``, with its own accumulator buffer;
        ``firsts``: the first page of each column read through the cache; ``params``: the
        query's constants (``codegen.Params.arrays``), copied to the GPU once per launch
        entry."""
        q = plan.query
        acc = accumulate.alloc(1, accumulate.n_groups(plan.key_domains), q.aggs)
        for k in ("MNF", "MXF"):  # the kernel keeps float MIN/MAX as int64 order keys
            acc[k] = accumulate.order_keys(acc[k])
        small = [np.zeros(1 + 2 * len(firsts), np.int64), *acc.values()]
        buf, offs = _pack(small)
        dbuf = self.cuda.to_device(buf)
        counters, *d_acc = [_typed(dbuf, a.dtype, o, a.size, a.shape)
                            for a, o in zip(small, offs, strict=True)]
        if self.backend == Backend.FILE:
            hq = ts.queue
            io = (_typed(hq.staging, np.uint64), hq.sq_page, hq.sq_staging, hq.sq_seq, hq.sq_turn,
                  ts.sq_tail, hq.cq_done, ts.warp_seq, hq.qsize, *ts.staged)
        else:
            io = (ts.views[-1],)
        pbuf, poffs = _pack(list(params))
        d_pbuf = self.cuda.to_device(pbuf)
        d_params = [_typed(d_pbuf, a.dtype, o, a.size, a.shape)
                    for a, o in zip(params, poffs, strict=True)]
        args = (total, *ranges, *scan_arrays, *firsts, *ts.views[:-2],
                ts.state, ts.page_slot, ts.slot_page, ts.slot_lock, ts.clock, ts.n_slots,
                ts.views[-2], *io, *d_params, counters, *d_acc)
        blocks = max(1, min(self.sms * 8, -(-max(total, 1) // kgpu.BLOCK)))
        if self.backend == Backend.FILE:  # one staging page per warp (per thread in the simulator)
            from bamql.kernels.gpu_queue import THREADS_PER_STAGING

            blocks = min(blocks, max(1, ts.queue.qsize * THREADS_PER_STAGING // kgpu.BLOCK))
        resident = {id(d) for d in ts.resident.values()}
        volatile = bool(filled) or any(id(a) in resident for a in scan_arrays)
        return _Launch(plan, args, blocks, small, offs, buf, dbuf, volatile, list(acc))

    def _range_arrays(self, ts: TableState, ranges) -> tuple:
        """``(offsets, starts, n, chunk rows, n chunks)`` of ``ranges`` on the GPU, made once
        per ranges object (plans are cached, so a repeated query reuses them)."""
        hit = ts.range_arrays.get(id(ranges))
        if hit is not None and hit[0] is ranges:
            return hit[1]
        cuda = self.cuda
        if len(ranges):
            off, lo = cuda.to_device(ranges.offsets), cuda.to_device(ranges.starts)
        else:
            off = lo = cuda.to_device(np.zeros(1, np.int64))
        chunks = ranges.chunk_rows(32) if len(ranges) > 1 else None
        d_chunks = cuda.to_device(chunks if chunks is not None else np.zeros(1, np.int64))
        out = (off, lo, max(len(ranges), 1), d_chunks, 0 if chunks is None else len(chunks))
        if len(ts.range_arrays) >= 16:
            ts.range_arrays.pop(next(iter(ts.range_arrays)))
        ts.range_arrays[id(ranges)] = (ranges, out)
        return out

    def _scan_column(self, ts: TableState, store: PageStore, c, total: int, full: bool, ranges,
                     compressed: bool = False, disk: dict | None = None):
        """How the kernel reads a directly scanned column: ``(array, resident copy, fill,
        pages crossing PCIe now)``. On the host backend a full scan writes the values it reads
        into a device copy (``fill``), so later queries read the column from GPU memory."""
        ps = store.page_size
        off, count = c.first_page * ps, c.n_pages * c.rows_per_page
        if self.backend == Backend.GPU:
            arr = self._view(ts, c.name, ts.source, c.np_dtype, off, count)
            return arr, arr, 0, 0
        if c.name in ts.resident:
            arr = ts.resident[c.name]
            return arr, arr, 0, 0
        if self.backend == Backend.FILE:
            buf, moved, nbytes = self._stream(ts, store, c, ranges, compressed)
            if disk is not None:
                disk[c.name] = nbytes  # what came from the disk (the zstd copy's bytes)
            view = self._view(ts, c.name, buf, c.np_dtype, 0, count)
        else:
            view = self._view(ts, c.name, ts.source, c.np_dtype, off, count)
            moved = ranges.pages(c.rows_per_page)  # the pages holding candidates cross PCIe
        nbytes = count * c.itemsize
        if full and ts.resident_bytes + nbytes <= ts.n_slots * ps:
            d = ts.spare.pop(c.name, None)
            if d is None:
                ts.spare.clear()  # other columns' idle buffers go before a new one comes
                try:
                    d = self.cuda.device_array(count, dtype=c.np_dtype)
                except Exception:  # no room: read it over PCIe each time instead
                    return view, view, 0, moved
            return view, d, 1, moved  # resident once the kernel has filled it
        return view, view, 0, moved

    @staticmethod
    def _view(ts: TableState, name: str, base, dtype, off: int, count: int):
        """The typed view of a scanned column's pages, made once (its identity keys the
        plan's prepared launch)."""
        hit = ts.col_views.get(name)
        if hit is None or hit[0] is not base:
            hit = (base, _typed(base, dtype, off, count))
            ts.col_views[name] = hit
        return hit[1]

    def close(self) -> None:
        for ts in self.tables.values():
            if ts.queue is not None:
                ts.queue.stop()
        if self._io_pool is not None:
            self._io_pool.shutdown(wait=True)
            self._io_pool = None
        self.tables.clear()
