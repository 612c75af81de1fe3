"""The GPU executor: one backend (where pages come from), the session's page caches, launches.

The cache (per table, ``cache`` bytes) lives as long as the engine, so a repeated query hits
in GPU memory; predicate columns scanned whole are kept on the GPU too when they fit.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from dataclasses import dataclass, field

import numpy as np

from bamql.config import AccessPath, Backend, Config, Role
from bamql.errors import DeviceError, StoreError
from bamql.fused import ir
from bamql.fused.domains import HashSlots
from bamql.gpu import hashgroup, kernel
from bamql.gpu.backends import BACKENDS, GpuBackend, PageCache
from bamql.gpu.device import out_of_memory, small_grid_ok, typed
from bamql.gpu.launch import Launch, pack
from bamql.kernels import accumulate
from bamql.lru import LRU
from bamql.physical.planning import PhysicalPlan
from bamql.storage.iostats import QueryStats
from bamql.storage.store import PageStore


@dataclass
class Table:
    """One table on the GPU: its page cache, its backend's source, and what repeated
    queries reuse."""

    name: str
    cache: PageCache
    source: object  # the backend's (``GpuBackend.load``)
    resident: dict = field(default_factory=dict)  # scanned column -> device copy
    resident_bytes: int = 0
    load_seconds: float = 0.0
    reported: bool = False  # load time already charged to a query's stats
    #: id(RowRanges) -> (the ranges, their device arrays): a repeated plan's candidate ranges
    #: are laid out and copied to the GPU once
    range_arrays: dict = field(default_factory=dict)
    #: (id(plan), scan arguments) -> Launch: a repeated plan's arguments, result buffers and
    #: prepared launch parameters, made once
    launches: dict = field(default_factory=dict)
    col_views: dict = field(default_factory=dict)  # column -> typed view of its pages
    #: the frame of reference of every page (``storage.packing``; one 0 for a store with no
    #: packed column), in GPU memory
    ref: object = None
    spare: dict = field(default_factory=dict)  # column -> device buffer a cleared cache left


@dataclass
class _Scans:
    """The directly read columns of one query: kernel arguments and what they moved."""

    arrays: list = field(default_factory=list)  # (view, resident copy, fill) per column
    filled: dict = field(default_factory=dict)  # column -> device copy the kernel fills
    moved: dict = field(default_factory=dict)  # column -> pages crossing PCIe now
    disk: dict = field(default_factory=dict)  # column -> bytes read from disk (streams)


#: the engines not yet closed: the process closes them at exit (``_close_at_exit``)
_open: weakref.WeakSet = weakref.WeakSet()
#: A kernel's first launch loads its module into the context; numba-cuda's loader is not
#: safe against two threads loading one module at once ("key already in dictionary"), so
#: first launches take turns, in every session of the process.
_first_launch = threading.Lock()
_exit_hook = threading.Lock()
_hooked = False  # ``_close_at_exit`` is registered


def _close_at_exit() -> None:
    """Close the engines a program left open before the interpreter and CUDA shut down:
    their I/O threads poll queues in pinned memory, which must not outlive the context."""
    for e in list(_open):
        try:
            e.close()
        except Exception:  # noqa: BLE001 (at exit nothing is left to report to)
            pass


def _closed_at_exit(engine: GpuEngine) -> None:
    """Have ``engine`` closed at exit unless closed before; the hook is registered with the
    first engine, after CUDA's own, so that atexit runs it first."""
    global _hooked
    with _exit_hook:
        if not _hooked:
            atexit.register(_close_at_exit)
            _hooked = True
        _open.add(engine)


def memory_info(cuda) -> tuple[int | float, int | float]:
    """``(free, total)`` bytes of the current GPU: its context's memory manager's figures,
    else the driver's. An external memory manager (such as RMM's, which cuDF and dask-cuda
    install in a Dask worker) may not tell: numba's plugin interface lets its
    ``get_memory_info`` raise NotImplementedError. The CUDA simulator's are infinite."""
    try:
        free, total = cuda.current_context().get_memory_info()
    except NotImplementedError:
        from numba.cuda.cudadrv.driver import driver

        free, total = driver.cuMemGetInfo()
    return tuple(x if x == float("inf") else int(x) for x in (free, total))


class GpuEngine:
    """Runs physical plans on the GPU for one session (or one Dask worker).

    Parameters
    ----------
    config
        Its backend (``host`` when it names none), page-cache size and launch settings.
    """

    def __init__(self, config: Config) -> None:
        from numba import cuda

        self.cuda = cuda
        self.config = config
        dev = cuda.get_current_device()
        name = getattr(dev, "name", "CUDA simulator")  # the simulator's device has no name
        self.name = name.decode() if isinstance(name, bytes) else name
        self.sms = getattr(dev, "MULTIPROCESSOR_COUNT", 1)
        self.backend: GpuBackend = BACKENDS[config.backend or Backend.HOST](cuda, self.sms)
        self.cache_bytes = config.cache
        self.tables: dict[str, Table] = {}
        self._sources: LRU = LRU(256)  # id(plan) -> (plan, store, scan, kernel source, params)
        self._lock = threading.Lock()
        self.free_at_start, self.total = memory_info(cuda)
        #: kernels already launched once (compiled), held so that their ids stay theirs
        self._warmed = LRU(256)
        self._run_lock = threading.Lock()
        # a cache clear and a kernel never overlap: a clear under a running kernel leaves
        # pages VALID with no slot (wrong reads) or slots no claim can take (a hang)
        self._cache_lock = threading.RLock()
        _closed_at_exit(self)

    # -- setting a table up ----------------------------------------------------------------
    def _table(self, store: PageStore) -> Table:
        with self._lock:
            key = str(store.path)  # partitions of one table share its name
            t = self.tables.get(key)
            if t is None:
                t = self.tables[key] = self._load(store)
            return t

    def _load(self, store: PageStore) -> Table:
        t0 = time.perf_counter()
        m, be = store.manifest, self.backend
        free, _ = memory_info(self.cuda)
        cache = self.cache_bytes
        if cache is None:  # default: a quarter of free memory, at most 8 GiB
            cache = min(8 << 30, free // 4)
        n_ids = be.page_ids(store)
        # no more slots than the table has pages: a small table (a file read in place for
        # one query) does not hold gigabytes of GPU memory
        n_slots = max(1, min(cache // m.page_size, n_ids))
        if n_ids >= 2**31 - 1:  # the cache keeps page ids in int32 words
            raise DeviceError(f"table {store.name!r} has {n_ids:,} pages; the GPU page cache "
                              "holds at most 2,147,483,646: ingest it with a larger page size "
                              "or in partitions")
        pages = be.footprint(store)
        need = n_slots * m.page_size + n_ids * 8 + pages
        if need > free * 0.95:
            raise DeviceError(
                f"table {store.name!r} needs {need / 2**30:.2f} GiB of GPU memory "
                f"({'store ' + format(pages / 2**30, '.2f') + ' GiB + ' if pages else ''}"
                f"cache {n_slots * m.page_size / 2**30:.2f} GiB) but {free / 2**30:.2f} GiB are free; "
                "use a smaller cache= or backend='host'")
        try:
            cache = PageCache.allocate(self.cuda, n_slots, m.page_size, n_ids)
            source = be.load(store)
        except Exception as e:
            if out_of_memory(e):
                raise DeviceError(f"GPU out of memory loading table {store.name!r} "
                                  f"({m.total_pages * m.page_size / 2**30:.2f} GiB store, "
                                  f"backend {be.kind})") from None
            raise
        ref = store.pages.ref
        ref = self.cuda.to_device(ref if ref is not None and len(ref) else np.zeros(1, np.int64))
        return Table(store.name, cache, source, load_seconds=time.perf_counter() - t0, ref=ref)

    def drop(self, store: PageStore) -> None:
        """Forget ``store``'s table on the GPU: its page cache, resident columns and
        backend source go (a table read in place for one query, replaced by the next)."""
        with self._lock:
            t = self.tables.pop(str(store.path), None)
        if t is not None:
            with self._cache_lock:
                self.backend.close(t.source)

    def clear_cache(self, table: str | None = None) -> None:
        """Empty the page cache (and resident columns) of one or all tables."""
        with self._cache_lock:
            self.cuda.current_context()  # the memsets call the driver directly, from any thread
            for t in self.tables.values():
                if table in (None, t.name):
                    t.cache.clear()
                    self.backend.clear(t.source)
                    # resident columns become spare buffers: the next full scan fills them
                    # again without a new allocation; launches that read them are dropped
                    t.spare.update(t.resident)
                    t.resident.clear()
                    t.resident_bytes = 0
                    t.launches = {k: v for k, v in t.launches.items() if not v.volatile}
            self.cuda.synchronize()  # done before the next query's clock starts

    # -- running ---------------------------------------------------------------------------
    def run(self, plan: PhysicalPlan, store: PageStore, stats: QueryStats) -> dict[str, np.ndarray]:
        """Execute ``plan`` on the GPU; fills ``stats``; returns merged accumulators."""
        if not self.backend.serial:
            return self._run(plan, store, stats)
        # kernels run one after another on the default stream anyway; the backend's
        # per-launch state (staging pages, sequence numbers, queue counters) is one launch's
        with self._run_lock:
            return self._run(plan, store, stats)

    def _run(self, plan: PhysicalPlan, store: PageStore, stats: QueryStats) -> dict[str, np.ndarray]:
        # this thread's CUDA context: the prepared launch calls the driver directly, and a
        # Dask worker runs a quick query on its event loop's thread, not the one that loaded
        self.cuda.current_context()
        t = self._table(store)
        used: list[str] = []
        for e in (plan.query.predicate, *plan.query.keys, *plan.query.aggs):
            for c in ir.columns_of(e):
                if c not in used:
                    used.append(c)
        scan = self.backend.scanned(plan, used)
        stats.setup_seconds = t.load_seconds if not t.reported else 0.0
        t.reported = True
        cached = [n for n in used if n not in scan]
        src, params, firsts = self._source(plan, store, used, scan, cached)
        # the query's time runs from here (column copies over PCIe included) to the results,
        # less the compilation
        t_start = time.perf_counter()
        kern = kernel.compile_kernel(src)
        stats.compile_seconds = time.perf_counter() - t_start
        ranges = self._range_arrays(t, plan.ranges)
        # a cache clear from another thread waits: between the batch read of the compressed
        # columns and their hand-out it would make a column counted resident be read again,
        # over the batch's buffer (and ``t.resident`` change under the checks)
        with self._cache_lock:
            scans = self._scans(t, plan, store, scan)
        key = (id(plan), tuple(a if isinstance(a, int) else id(a) for a in scans.arrays))
        ln = t.launches.get(key)
        if ln is None or ln.plan is not plan:
            ln = self._new_launch(t, plan, scans, firsts, ranges, params.arrays())
            if len(t.launches) >= 64:
                t.launches.pop(next(iter(t.launches)))
            t.launches[key] = ln
        with ln.lock:
            self._launch(t, store, kern, ln, stats)
            host = ln.results()
        why = self.backend.finish(t.source, stats)
        if why is not None:  # pages of this query may be wrong: forget them
            self._recover(t, store)
            self.clear_cache(store.name)
            raise StoreError(f"reading pages for the GPU failed: {why}")
        for n, d in scans.filled.items():
            t.resident[n] = d
            t.resident_bytes += d.nbytes
        host_acc = dict(zip(ln.acc_names, host[1:], strict=True))
        for k in ("MNF", "MXF"):  # order keys back to floats
            host_acc[k] = accumulate.order_keys(host_acc[k])
        stats.seconds = time.perf_counter() - t_start - stats.compile_seconds
        stats.rows_matched = int(host[0][0])
        self._account(plan, store, stats, scans, cached, host[0])
        return accumulate.merge(host_acc, None)

    def _source(self, plan: PhysicalPlan, store: PageStore, used: list[str], scan: set[str],
                cached: list[str]) -> tuple:
        """The kernel source of ``plan`` on ``store``, its constants, and the first page of
        each column read through the cache; made once per plan, store and scan set."""
        hit = self._sources.get(id(plan))
        shadow = self.backend.shadowed(plan)
        # a gather through a row group reads the column's copy there
        # (a row group's copy is never packed: ``storage.groups``)
        cols = {n: kernel.column_layout(store.shadow[n] if n in shadow else store.column(n),
                                        store.page_size) for n in used}
        firsts = [cols[n][0] for n in cached]
        if hit is not None and hit[0] is plan and hit[1] is store and hit[2] == scan:
            return hit[3], hit[4], firsts
        src, params = kernel.kernel_source(
            plan.query, plan.stages, plan.key_domains, cols,
            {n: c.sentinel for n, c in store.columns.items()}, scan,
            {n: i for i, n in enumerate(cached)}, queue=self.backend.queue,
            scales={n: c.scale for n, c in store.columns.items()})
        self._sources.put(id(plan), (plan, store, set(scan), src, params))
        return src, params, firsts

    def _launch(self, t: Table, store: PageStore, kern, ln: Launch, stats: QueryStats) -> None:
        """Run ``ln`` (compiling ``kern`` first if it never ran); times into ``stats``."""
        cuda = self.cuda
        try:
            if self._warmed.get(id(kern)) is not kern:
                with _first_launch, small_grid_ok():  # the warm-up launch is small on purpose
                    t0 = time.perf_counter()
                    kern[1, 32](0, *ln.args[1:])  # compiles (timed apart); no rows, no effect
                    cuda.synchronize()
                    self._warmed.put(id(kern), kern)
                stats.compile_seconds += time.perf_counter() - t0
            t_launch = time.perf_counter()
            ln.reset()  # the accumulators' initial values
            ev0, ev1 = ln.events
            with self.backend.running(t.source), self._cache_lock:  # no cache clear meanwhile
                ev0.record()
                ln.launch(kern, self.config.gpu_prepared)
                ev1.record()
                ln.fetch()  # synchronizes
            stats.kernel_seconds = time.perf_counter() - t_launch
            # the simulator keeps no time (it answers -1)
            stats.gpu_seconds = max(0.0, ev0.elapsed_time(ev1) / 1e3)
        except Exception as e:
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            self._recover(t, store)
            raise DeviceError(f"GPU kernel failed: {msg}") from None

    def _recover(self, t: Table, store: PageStore) -> None:
        self.backend.recover(t.source, store)
        t.launches.clear()  # their arguments may name the backend's old buffers

    def _account(self, plan: PhysicalPlan, store: PageStore, stats: QueryStats, scans: _Scans,
                 cached: list[str], counters: np.ndarray) -> None:
        """Each column's pages, bytes, hits and misses into ``stats``."""
        ps, total = store.page_size, plan.ranges.rows
        for n, moved in scans.moved.items():
            c = stats.columns[n]
            pages = -(-total // store.column(n).rows_per_page) if c.role == Role.PREDICATE else 0
            c.pages_read += moved
            c.bytes_read += scans.disk.get(n, moved * ps)
            c.cache_hits += pages if moved == 0 else 0
            c.values_needed += total if c.role == Role.PREDICATE else stats.rows_matched
            c.path = AccessPath.SCAN if c.role == Role.PREDICATE else self.backend.direct_path
        for i, n in enumerate(cached):
            c = stats.columns[n]
            hits, misses = int(counters[1 + 2 * i]), int(counters[2 + 2 * i])
            c.cache_hits += hits
            c.cache_misses += misses
            c.pages_read += misses
            c.bytes_read += misses * ps
            c.values_needed += stats.rows_matched if c.role == Role.DEPENDENT else 0
            c.path = AccessPath.CACHE

    def _scans(self, t: Table, plan: PhysicalPlan, store: PageStore, scan: set[str]) -> _Scans:
        """The kernel arguments of the directly read columns."""
        out = _Scans()
        first = set(plan.stages[0].columns) if plan.stages else set()
        zst = {a.column: a.compressed for a in plan.access}  # streamed from the zstd copy
        self.backend.prefetch(t.source, store, [store.column(n) for n in sorted(scan)
                                                if zst.get(n, False) and n not in t.resident],
                              plan.ranges)
        for n in sorted(scan):
            # write-through only for stage-1 columns: every candidate row is live when they
            # are read, so the device copy gets every value (later columns only the survivors')
            full = plan.ranges.is_whole(store.rows) and n in first
            arr, resident, fill, moved = self._scan_column(t, store, store.column(n), full,
                                                           plan.ranges, zst.get(n, False), out.disk)
            out.arrays += [arr, resident, fill]
            if fill:
                out.filled[n] = resident
            out.moved[n] = moved
        return out

    def _new_launch(self, t: Table, plan: PhysicalPlan, scans: _Scans, firsts: list[int],
                    ranges: tuple, params: tuple[np.ndarray, ...]) -> Launch:
        """The arguments of ``plan``'s kernel on ``t``, with its own accumulator buffer;
        ``firsts``: the first page of each column read through the cache; ``params``: the
        query's constants (``codegen.Params.arrays``), copied to the GPU once per launch
        entry."""
        q, total = plan.query, plan.ranges.rows
        acc = accumulate.alloc(1, accumulate.n_groups(plan.key_domains), q.aggs)
        if isinstance(plan.key_domains, HashSlots):  # the kernel's hash table of groups
            acc.update(hashgroup.arrays(plan.key_domains))
        for k in ("MNF", "MXF"):  # the kernel keeps float MIN/MAX as int64 order keys
            acc[k] = accumulate.order_keys(acc[k])
        small = [np.zeros(1 + 2 * len(firsts), np.int64), *acc.values()]
        buf, offs = pack(small)
        dbuf = self.cuda.to_device(buf)
        counters, *d_acc = [typed(dbuf, a.dtype, o, a.size, a.shape)
                            for a, o in zip(small, offs, strict=True)]
        pbuf, poffs = pack(list(params))
        d_pbuf = self.cuda.to_device(pbuf)
        d_params = [typed(d_pbuf, a.dtype, o, a.size, a.shape)
                    for a, o in zip(params, poffs, strict=True)]
        args = (total, *ranges, *scans.arrays, *firsts, t.ref, *t.cache.args(),
                *self.backend.io_args(t.source), *d_params, counters, *d_acc)
        blocks = max(1, min(self.sms * 8, -(-max(total, 1) // kernel.BLOCK)))
        blocks = self.backend.blocks(t.source, blocks)
        resident = {id(d) for d in t.resident.values()}
        volatile = bool(scans.filled) or any(id(a) in resident for a in scans.arrays)
        return Launch(plan, args, blocks, small, offs, buf, dbuf, volatile, list(acc))

    def _range_arrays(self, t: Table, ranges) -> tuple:
        """``(offsets, starts, n, chunk rows, n chunks)`` of ``ranges`` on the GPU, made once
        per ranges object (plans are cached, so a repeated query reuses them)."""
        hit = t.range_arrays.get(id(ranges))
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
        if len(t.range_arrays) >= 16:
            t.range_arrays.pop(next(iter(t.range_arrays)))
        t.range_arrays[id(ranges)] = (ranges, out)
        return out

    def _scan_column(self, t: Table, store: PageStore, c, full: bool, ranges,
                     compressed: bool, disk: dict):
        """How the kernel reads a directly scanned column: ``(array, resident copy, fill,
        pages crossing PCIe now)``. Off the GPU a full scan writes the values it reads into a
        device copy (``fill``), so later queries read the column from GPU memory."""
        if c.bits:
            return self._scan_packed(t, store, c, full, ranges, compressed, disk)
        if c.name in t.resident:
            arr = t.resident[c.name]
            return arr, arr, 0, 0
        count = c.n_pages * c.rows_per_page
        rd = self.backend.column(t.source, store, c, ranges, compressed)
        moved = rd.moved
        if rd.disk_bytes is not None:
            disk[c.name] = rd.disk_bytes  # what came from the disk (the zstd copy's bytes)
        view = self._view(t, c.name, rd.buffer, c.np_dtype, rd.offset, count)
        if self.backend.in_gpu_memory:
            return view, view, 0, moved
        if rd.on_gpu:  # decompressed into GPU memory: a copy of its own stays resident
            view = self._keep(t, store, c.name, view, full)
            return view, view, 0, moved
        nbytes = count * c.itemsize
        if full and t.resident_bytes + nbytes <= t.cache.n_slots * store.page_size:
            d = t.spare.pop(c.name, None)
            if d is None:
                t.spare.clear()  # other columns' idle buffers go before a new one comes
                try:
                    d = self.cuda.device_array(count, dtype=c.np_dtype)
                except Exception:  # no room: read it over PCIe each time instead
                    return view, view, 0, moved
            return view, d, 1, moved  # resident once the kernel has filled it
        return view, view, 0, moved

    def _scan_packed(self, t: Table, store: PageStore, c, full: bool, ranges, compressed: bool,
                     disk: dict):
        """``_scan_column`` of a bit-packed column: its pages as uint64 words and the
        references of its pages (``kernel.kernel_source``). A packed column is not written
        through (the kernel decodes values, the copy keeps codes): off the GPU a full scan
        copies its words to GPU memory instead, where later queries read them."""
        key = (c.name, "ref")
        hit = t.col_views.get(key)
        if hit is None or hit[0] is not t.ref:
            hit = (t.ref, t.ref[c.first_page : c.first_page + c.n_pages])
            t.col_views[key] = hit
        ref = hit[1]
        if c.name in t.resident:
            return t.resident[c.name], ref, 0, 0
        words = c.n_pages * store.page_size // 8
        rd = self.backend.column(t.source, store, c, ranges, compressed)
        moved = rd.moved
        if rd.disk_bytes is not None:
            disk[c.name] = rd.disk_bytes
        view = self._view(t, c.name, rd.buffer, np.uint64, rd.offset, words)
        if rd.on_gpu:  # decompressed into GPU memory: a copy of its own stays resident
            return self._keep(t, store, c.name, view, full), ref, 0, moved
        if (full and not self.backend.in_gpu_memory
                and t.resident_bytes + words * 8 <= t.cache.n_slots * store.page_size):
            try:
                d = self.cuda.device_array(words, dtype=np.uint64)
            except Exception:  # no room: read it over PCIe each time instead
                return view, ref, 0, moved
            d.copy_to_device(view)
            t.resident[c.name] = d
            t.resident_bytes += d.nbytes
            return d, ref, 0, moved
        return view, ref, 0, moved

    def _keep(self, t: Table, store: PageStore, name: str, view, full: bool):
        """A column the backend read into GPU memory (its buffer of decompressed pages, or
        of the column's streamed pages): after a full scan, within the table's GPU budget,
        a copy in GPU memory of its own (the spare one, if a clear left it) stays resident,
        as a written-through copy would, and the backend forgets its buffer of the column;
        the array the kernel reads."""
        if not full or t.resident_bytes + view.nbytes > t.cache.n_slots * store.page_size:
            return view
        d = t.spare.pop(name, None)
        if d is None or d.shape != view.shape or d.dtype != view.dtype:
            t.spare.clear()  # other columns' idle buffers go before a new one comes
            try:
                d = self.cuda.device_array(view.shape, dtype=view.dtype)
            except Exception:  # no room: read it from the batch buffer this time
                return view
        d.copy_to_device(view)
        t.resident[name] = d
        t.resident_bytes += d.nbytes
        # the backend's buffer of the column is no longer read: its memory goes
        self.backend.release(t.source, name)
        t.col_views.pop(name, None)
        return d

    @staticmethod
    def _view(t: Table, name: str, base, dtype, off: int, count: int):
        """The typed view of a scanned column's pages, made once per buffer and offset (its
        identity keys the plan's prepared launch; a batch of decompressed columns puts a
        column at another offset when the batch holds other columns)."""
        hit = t.col_views.get(name)
        if hit is None or hit[0] is not base or hit[1] != off:
            hit = (base, off, typed(base, dtype, off, count))
            t.col_views[name] = hit
        return hit[2]

    def close(self) -> None:
        """Release every table's source and the backend."""
        _open.discard(self)
        for t in self.tables.values():
            self.backend.close(t.source)
        self.backend.shutdown()
        self.tables.clear()
