"""Where a table's pages come from on the GPU: one class per backend, one interface.

- ``DeviceBackend`` (``gpu``): the whole store resident in GPU memory (the upper bound).
- ``HostBackend`` (``host``): the store in pinned, mapped host memory; the GPU reads it
  itself over PCIe (zero copy): stage-1 predicate columns directly and coalesced, every
  other column through the page cache, whose misses the warp copies from host memory.
- ``FileBackend`` (``file``): the store stays in its volume files. Cache misses are
  GPU-initiated reads: the warp puts a command on a submission queue in mapped host memory
  (``device_queue``), host I/O workers (``host_queue``) read the page into the warp's pinned
  staging page and post a completion, and the warp copies staging into the cache slot.
  Columns the plan streams (stage-1 predicates, and dependent columns where the cost model
  finds a sequential read cheaper than random reads) are read by the host in large
  sequential reads, each through a thread's pinned staging into the column's buffer in GPU
  memory, where a kernel checks every page (``gpu.pagecheck``) and the query's kernel reads
  them; where GPU memory has no room, into a pinned mapped buffer the kernel reads over PCIe.

A backend makes a table's *source* (``load``) and answers, for the engine, which columns a
plan reads directly, where a directly read column's pages are, and what the kernel's I/O
arguments are. The page cache itself (``PageCache``) is the same for all three.
"""

from __future__ import annotations

import contextlib
import os
from abc import ABC, abstractmethod
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

import numpy as np

from bamql.config import AccessPath, Backend, Medium
from bamql.gpu import kernel, pagecheck
from bamql.gpu.device import fill, host_view, out_of_memory, typed
from bamql.physical import cost
from bamql.physical.planning import PhysicalPlan
from bamql.storage.store import PageStore

#: the slot views the kernel reads a cached page through, one per column type
SLOT_DTYPES = ("int8", "int16", "int32", "int64", "float32", "float64")
#: the size of the chunks a whole store is read and copied in, and of a stream's reads
CHUNK = 256 << 20
STREAM_READ = 16 << 20
#: threads reading a stream's (or a compressed copy's) chunks: reads in flight on the disk
STREAM_THREADS = 8


@dataclass
class PageCache:
    """One table's page cache in GPU memory (``device_cache``'s state).

    ``state``, ``page_slot``: per page id; ``slot_page``, ``slot_lock``: per slot; ``clock``:
    the eviction hand; ``views``: the slots typed as each of ``SLOT_DTYPES``, then as words.
    """

    n_slots: int
    slots: object
    state: object
    page_slot: object
    slot_page: object
    slot_lock: object
    clock: object
    views: tuple = ()

    @classmethod
    def allocate(cls, cuda, n_slots: int, page_size: int, n_ids: int) -> PageCache:
        """An empty cache of ``n_slots`` pages of ``page_size`` bytes over ``n_ids`` page ids."""
        slots = cuda.device_array(n_slots * page_size, dtype=np.uint8)
        return cls(
            n_slots=n_slots, slots=slots,
            state=cuda.to_device(np.zeros(n_ids, np.int32)),
            page_slot=cuda.to_device(np.full(n_ids, -1, np.int32)),
            slot_page=cuda.to_device(np.full(n_slots, -1, np.int32)),
            slot_lock=cuda.to_device(np.zeros(n_slots, np.int32)),
            clock=cuda.to_device(np.zeros(1, np.int64)),
            views=(*[typed(slots, d) for d in SLOT_DTYPES], typed(slots, np.uint64)))

    def args(self) -> tuple:
        """The kernel's cache arguments, ``s_int8`` to ``slot_words``."""
        return (*self.views[:-1], self.state, self.page_slot, self.slot_page, self.slot_lock,
                self.clock, self.n_slots, self.views[-1])

    def clear(self) -> None:
        """Forget every page (memsets on the GPU)."""
        fill(self.state, 0)
        fill(self.page_slot, -1)
        fill(self.slot_page, -1)


@dataclass
class MemorySource:
    """A whole store in GPU or mapped host memory, in global page order."""

    pages: object  # uint8 device or mapped array
    words: object  # the same, as uint64 words (the cache's fill reads them)


@dataclass
class FileSource:
    """A ``file`` table's queue, its device-side words and its streamed columns' buffers."""

    queue: object  # host_queue.HostQueue
    sq_tail: object  # the tickets: GPU atomics, in GPU memory
    warp_seq: object  # each staging page's sequence number
    staged: tuple  # what each staging page holds, and the row-group layout
    colbufs: dict = field(default_factory=dict)  # column -> pinned mapped buffer
    devcols: dict = field(default_factory=dict)  # column -> its pages' buffer in GPU memory
    devbuf: object = None  # GPU memory the compressed copies are decompressed into
    ready: dict = field(default_factory=dict)  # column -> its ColumnRead of the last prefetch
    devsums: dict = field(default_factory=dict)  # column -> its page checksums on the GPU


class ColumnRead(NamedTuple):
    """Where a directly read column is for one query (``GpuBackend.column``)."""

    buffer: object  # uint8 device or mapped array holding the column's pages
    offset: int  # byte offset of its first page in ``buffer``
    moved: int  # pages that crossed PCIe or came from disk for this query
    disk_bytes: int | None  # bytes read from disk (the zstd copy's, when streamed from it)
    on_gpu: bool = False  # ``buffer`` is GPU memory the backend filled for this query


class GpuBackend(ABC):
    """Where pages come from: the engine holds one and never asks which.

    Parameters
    ----------
    cuda
        ``numba.cuda`` (or its simulator).
    sms
        The device's multiprocessor count (the grid the engine launches).
    """

    kind: ClassVar[Backend]
    #: what the cost model plans for on this backend
    medium: ClassVar[Medium]
    #: cache misses go through the submission queue (``device_queue.warp_read_file``)
    queue: ClassVar[bool] = False
    #: the store is in GPU memory: a scanned column is never copied there to stay resident
    in_gpu_memory: ClassVar[bool] = False
    #: one query at a time per engine (the queue's staging pages belong to one launch)
    serial: ClassVar[bool] = False
    #: how a directly read column that is not a predicate reaches the kernel (statistics)
    direct_path: ClassVar[AccessPath] = AccessPath.DIRECT

    def __init__(self, cuda, sms: int) -> None:
        self.cuda = cuda
        self.sms = sms

    def page_ids(self, store: PageStore) -> int:
        """How many page ids the cache tracks for ``store``."""
        return store.manifest.total_pages

    def footprint(self, store: PageStore) -> int:
        """GPU memory ``store``'s pages take on this backend (the cache apart)."""
        return 0

    @abstractmethod
    def load(self, store: PageStore) -> object:
        """The table's source: its pages where this backend keeps them."""

    @abstractmethod
    def scanned(self, plan: PhysicalPlan, used: list[str]) -> set[str]:
        """The columns of ``plan`` (of ``used``) that the kernel reads directly."""

    def shadowed(self, plan: PhysicalPlan) -> set[str]:
        """The columns that a gather reads from their row-group copy."""
        return set()

    @abstractmethod
    def column(self, source, store: PageStore, c, ranges, compressed: bool) -> ColumnRead:
        """Where directly read column ``c`` is for a query over ``ranges``; ``compressed``:
        the plan streams it from its zstd copy."""

    def prefetch(self, source, store: PageStore, cols: list, ranges) -> None:
        """Columns ``cols`` are about to be read from their compressed copies over
        ``ranges`` (a backend may read them together)."""
        return None

    @abstractmethod
    def io_args(self, source) -> tuple:
        """The kernel's I/O arguments (``kernel.kernel_source``'s ``io``)."""

    def blocks(self, source, blocks: int) -> int:
        """The grid size, at most ``blocks``."""
        return blocks

    @contextlib.contextmanager
    def running(self, source) -> Iterator[None]:
        """The context a kernel runs in."""
        yield

    def finish(self, source, stats) -> str | None:
        """After a kernel: its I/O statistics into ``stats``; the reason when the pages it
        read may be wrong, else None."""
        return None

    def recover(self, source, store: PageStore) -> None:
        """After a failed kernel: make ``source`` usable again."""
        return None  # nothing beyond the memory the source holds

    def clear(self, source) -> None:
        """Forget what ``source`` holds beyond the page cache."""
        return None  # nothing beyond the memory the source holds

    def release(self, source, name: str) -> None:
        """Forget the backend's own buffer of column ``name``, which a copy in GPU memory
        now holds for the table (``GpuEngine._keep``)."""
        return None  # the source holds no column buffer of its own

    def close(self, source) -> None:
        """Release ``source``."""
        return None  # nothing beyond the memory the source holds

    def shutdown(self) -> None:
        """Release what the backend holds for all its tables."""
        return None  # nothing beyond the memory the source holds


class DeviceBackend(GpuBackend):
    """The store in GPU memory: every column is read directly."""

    kind = Backend.GPU
    medium = Medium.GPU
    in_gpu_memory = True

    def footprint(self, store: PageStore) -> int:
        return store.manifest.total_pages * store.page_size

    def load(self, store: PageStore) -> MemorySource:
        cuda, m = self.cuda, store.manifest
        pages = cuda.device_array(m.total_pages * m.page_size, dtype=np.uint8)
        buf = cuda.pinned_array(CHUNK, dtype=np.uint8)
        step = CHUNK // m.page_size
        for p0 in range(0, m.total_pages, step):
            ids = np.arange(p0, min(p0 + step, m.total_pages))
            n = len(ids) * m.page_size
            store.read_pages(ids, buf[:n].reshape(len(ids), m.page_size))
            pages[p0 * m.page_size : p0 * m.page_size + n].copy_to_device(buf[:n])
        return MemorySource(pages, typed(pages, np.uint64))

    def scanned(self, plan: PhysicalPlan, used: list[str]) -> set[str]:
        return set(used)

    def column(self, source: MemorySource, store: PageStore, c, ranges, compressed: bool):
        return ColumnRead(source.pages, c.first_page * store.page_size, 0, None)

    def io_args(self, source: MemorySource) -> tuple:
        return (source.words,)


class HostBackend(GpuBackend):
    """The store in pinned, mapped host memory, read by the GPU over PCIe."""

    kind = Backend.HOST
    medium = Medium.HOST

    def load(self, store: PageStore) -> MemorySource:
        m = store.manifest
        # an empty table has no page; the driver maps no buffer of 0 bytes
        pages = self.cuda.mapped_array(max(m.total_pages * m.page_size, 8), dtype=np.uint8)
        view = host_view(pages)[: m.total_pages * m.page_size].reshape(m.total_pages, m.page_size)
        step = max(1, CHUNK // m.page_size)
        for p0 in range(0, m.total_pages, step):
            ids = np.arange(p0, min(p0 + step, m.total_pages))
            store.read_pages(ids, view[p0 : p0 + len(ids)])
        return MemorySource(pages, typed(pages, np.uint64))

    def scanned(self, plan: PhysicalPlan, used: list[str]) -> set[str]:
        return set(plan.stages[0].columns) if plan.stages else set()

    def column(self, source: MemorySource, store: PageStore, c, ranges, compressed: bool):
        # the pages holding candidates cross PCIe
        return ColumnRead(source.pages, c.first_page * store.page_size,
                          ranges.pages(c.rows_per_page), None)

    def io_args(self, source: MemorySource) -> tuple:
        return (source.words,)


class FileBackend(GpuBackend):
    """The store in its volume files: GPU-initiated reads for misses, host streams for scans
    (compressed copies decompressed on the GPU where nvCOMP is installed: ``gpu.inflate``)."""

    kind = Backend.FILE
    medium = Medium.QUEUE
    queue = True
    serial = True
    direct_path = AccessPath.STREAM

    def __init__(self, cuda, sms: int) -> None:
        super().__init__(cuda, sms)
        # one staging page per warp in flight (at most ``CHUNK`` bytes of them)
        self.max_warps = sms * 8 * kernel.BLOCK // 32
        self._pool: ThreadPoolExecutor | None = None  # the streams' sequential reads
        self._staging = pagecheck.Staging(cuda, STREAM_READ)  # each reading thread's
        from bamql.gpu import inflate

        #: decompresses compressed copies on the GPU (None: on host threads)
        self.inflater = inflate.make(cuda)
        if self.inflater is not None:
            self.medium = Medium.NVCOMP

    def page_ids(self, store: PageStore) -> int:
        return store.manifest.all_pages  # row-group copies' pages too: gathers read them

    def load(self, store: PageStore) -> FileSource:
        return self._start(store)  # pages stay in the volume files until a query needs them

    def _start(self, store: PageStore) -> FileSource:
        """The submission queue, staging pages and I/O workers of a table."""
        from bamql.gpu.device_queue import THREADS_PER_STAGING
        from bamql.gpu.host_queue import HostQueue, staging_bytes

        cuda = self.cuda
        per_warp = 32 // THREADS_PER_STAGING  # 1 on a GPU; 32 in the simulator (per thread)
        # at least one block's worth: the simulator's threads each index a staging page
        n_staging = max(32 if per_warp == 1 else kernel.BLOCK,
                        min(self.max_warps * per_warp, CHUNK // staging_bytes(store)))
        # 64 reads in flight keep the disk busy (docs/bam.md: 16 to 256 threads reach its
        # limit); fewer on small machines, where more workers than cores only take turns
        workers = min(64, 4 * (os.cpu_count() or 1))
        queue = HostQueue(store, qsize=n_staging, n_staging=n_staging,
                          io_threads=workers).start(active=False)
        lay = store.layout
        staged = (cuda.to_device(np.full(n_staging, -1, np.int64)), cuda.to_device(lay.g_first),
                  cuda.to_device(lay.g_pages), queue.stage_bytes // 8, lay.total_pages)
        return FileSource(queue=queue, sq_tail=cuda.to_device(np.zeros(1, np.int64)),
                          warp_seq=cuda.to_device(np.zeros(n_staging, np.int64)), staged=staged)

    def scanned(self, plan: PhysicalPlan, used: list[str]) -> set[str]:
        scan = {a.column for a in plan.access if a.path in (AccessPath.SCAN, AccessPath.STREAM)}
        return scan | set(plan.stages[0].columns) if plan.stages else scan

    def shadowed(self, plan: PhysicalPlan) -> set[str]:
        return {a.column for a in plan.access if a.shadow}

    def column(self, source: FileSource, store: PageStore, c, ranges, compressed: bool):
        """Read the pages of ``c`` that hold candidate rows into its pinned mapped buffer, in
        large sequential reads on several threads (from its zstd copy with ``compressed``:
        into GPU memory where the GPU decompresses it)."""
        ps, rpp = store.page_size, c.rows_per_page
        if self._pool is None:
            self._pool = ThreadPoolExecutor(STREAM_THREADS, thread_name_prefix="bamql-stream")
        if compressed and self.inflater is not None and store.zst_sums is not None:
            rd = source.ready.pop(c.name, None)
            if rd is None:  # not in the batch: a buffer of its own, the batch's columns intact
                batch, keep = source.ready, source.devbuf
                source.ready, source.devbuf = {}, None
                try:
                    self.prefetch(source, store, [c], ranges)
                    # None: too few chunks for the GPU's call (as alone, so in the batch)
                    rd = source.ready.pop(c.name, None)
                finally:
                    source.ready, source.devbuf = batch, keep
            if rd is not None:
                return rd
        runs = zip(*(r.tolist() for r in ranges.page_runs(rpp)), strict=True)
        step = max(1, STREAM_READ // ps)
        if compressed:  # jobs of whole chunks: no chunk read or decompressed twice
            cp = store.manifest.streams.chunk_pages
            step = max(cp, step // cp * cp)
        jobs = [(i, min(i + step, p1)) for p0, p1 in runs for i in range(p0, p1, step)]
        if not compressed:
            dev = self._device_column(source, c, ps)
            if dev is not None:
                return self._to_gpu(source, store, c, dev, jobs)
        buf = source.colbufs.get(c.name)
        if buf is None:
            buf = self.cuda.mapped_array(max(c.n_pages, 1) * ps, dtype=np.uint8)
            source.colbufs[c.name] = buf
        view = host_view(buf)[: c.n_pages * ps].reshape(c.n_pages, ps)
        if compressed:
            read = lambda j: store.read_stream(c.name, j[0], j[1], view[j[0] : j[1]])  # noqa: E731
        else:
            read = lambda j: store.read_pages(  # noqa: E731
                np.arange(c.first_page + j[0], c.first_page + j[1]), view[j[0] : j[1]])
        nbytes = sum(self._pool.map(read, jobs))
        return ColumnRead(buf, 0, sum(b - a for a, b in jobs), nbytes)

    def _device_column(self, source: FileSource, c, ps: int):
        """The GPU buffer of ``c``'s pages (made on its first read), or None where the
        source's column buffers with it would take more than half of the GPU memory free
        besides them (then the column is read into a pinned mapped buffer that the kernel
        reads over PCIe)."""
        buf = source.devcols.get(c.name)
        if buf is not None:
            return buf
        size = max(c.n_pages, 1) * ps
        used = sum(b.nbytes for b in source.devcols.values())
        try:
            free = self.cuda.current_context().get_memory_info()[0]
        except Exception:  # the simulator: no memory figures
            free = 2 * size
        if 2 * (used + size) > free + used:  # the buffers take at most half of what they may
            return None
        try:
            buf = self.cuda.device_array(size, dtype=np.uint8)
        except Exception as e:
            if out_of_memory(e):
                return None
            raise
        source.devcols[c.name] = buf
        return buf

    def _to_gpu(self, source: FileSource, store: PageStore, c, dev, jobs: list) -> ColumnRead:
        """Read pages ``[a, b)`` of ``c`` for each job ``(a, b)`` into ``dev`` at their place:
        each job on a pool thread, through that thread's pinned staging and one copy to the
        GPU; then every page read is checked there against its checksum (``gpu.pagecheck``),
        so the host neither holds the column nor hashes its pages."""
        ps = store.page_size

        def read(job: tuple[int, int]) -> int:
            a, b = job
            n = (b - a) * ps
            staging = self._staging.get(n)
            got = store.read_pages(np.arange(c.first_page + a, c.first_page + b),
                                   staging[:n].reshape(b - a, ps), verify=False)
            dev[a * ps : b * ps].copy_to_device(staging[:n])
            return got

        nbytes = sum(self._pool.map(read, jobs))
        if jobs:
            need = np.concatenate([np.arange(a, b) for a, b in jobs])
            words = typed(dev, np.uint64, 0, c.n_pages * ps // 8)
            pagecheck.verify(self.cuda, store, c, words, need, 1, source.devsums)
        return ColumnRead(dev, 0, sum(b - a for a, b in jobs), nbytes, on_gpu=True)

    def prefetch(self, source: FileSource, store: PageStore, cols: list, ranges) -> None:
        """Where the GPU decompresses: read the compressed copies of ``cols`` (the pages
        holding candidates) into GPU memory in one batch, for ``column`` to hand out. Where
        they hold too few pages to repay the GPU's call (``cost.inflates_on_gpu``: a
        clustered plan's pruned chunks), ``column`` decompresses them on host threads: the
        choice grows with the bytes, so a column of the batch alone chooses as the batch did."""
        source.ready.clear()
        if self.inflater is None or store.zst_sums is None or not cols:
            return
        from bamql.gpu import inflate

        ps, cp = store.page_size, store.manifest.streams.chunk_pages
        sizes = np.array([max(c.n_pages, 1) * ps for c in cols], np.int64)
        base = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        items = [(c, *ranges.page_runs(c.rows_per_page), int(b))
                 for c, b in zip(cols, base, strict=True)]
        needs = [inflate.needed_chunks(p0, p1, cp) for _, p0, p1, _ in items]
        out = sum(len(n) for n in needs) * cp * ps
        if not cost.inflates_on_gpu(out, cost.MEDIA[self.medium]):
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(STREAM_THREADS, thread_name_prefix="bamql-stream")
        buf = source.devbuf
        if buf is None or buf.size < sizes.sum():
            buf = source.devbuf = self.cuda.device_array(int(sizes.sum()), dtype=np.uint8)
        got = self.inflater.read(store, items, buf, self._pool, source.devsums, needs)
        for (c, p0, p1, b), n in zip(items, got, strict=True):
            source.ready[c.name] = ColumnRead(buf, b, int((p1 - p0).sum()), n, on_gpu=True)

    def io_args(self, source: FileSource) -> tuple:
        q = source.queue
        return (typed(q.staging, np.uint64), q.sq_page, q.sq_staging, q.sq_seq, q.sq_turn,
                source.sq_tail, q.cq_done, source.warp_seq, q.qsize, *source.staged)

    def blocks(self, source: FileSource, blocks: int) -> int:
        from bamql.gpu.device_queue import THREADS_PER_STAGING

        # one staging page per warp (per thread in the simulator)
        return min(blocks, max(1, source.queue.qsize * THREADS_PER_STAGING // kernel.BLOCK))

    @contextlib.contextmanager
    def running(self, source: FileSource) -> Iterator[None]:
        source.queue.reset_stats()
        source.queue.begin()
        try:
            yield
        finally:
            source.queue.end()

    def finish(self, source: FileSource, stats) -> str | None:
        stats.io_reads, stats.io_depth = source.queue.served, source.queue.max_in_flight
        return None if source.queue.error is None else str(source.queue.error)

    def recover(self, source: FileSource, store: PageStore) -> None:
        """The queue's tickets may be out of step: start afresh, in place."""
        source.queue.stop()
        fresh = self._start(store)
        source.queue, source.sq_tail = fresh.queue, fresh.sq_tail
        source.warp_seq, source.staged = fresh.warp_seq, fresh.staged

    def clear(self, source: FileSource) -> None:
        fill(source.staged[0], -1)  # what the staging pages hold counts as cached too
        source.devcols.clear()

    def release(self, source: FileSource, name: str) -> None:
        source.devcols.pop(name, None)

    def close(self, source: FileSource) -> None:
        source.queue.stop()
        source.devbuf = None  # GPU memory goes with the table
        source.devcols.clear()
        source.ready.clear()
        source.devsums.clear()

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


BACKENDS: dict[Backend, type[GpuBackend]] = {
    b.kind: b for b in (DeviceBackend, HostBackend, FileBackend)}
