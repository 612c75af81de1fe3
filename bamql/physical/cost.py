"""The cost model: how many pages a gather touches, and gather vs stream per column."""

from __future__ import annotations

import os
from dataclasses import dataclass

from bamql import config
from bamql.config import AccessPath


@dataclass(frozen=True)
class Medium:
    """What a backend's storage is like: sequential bandwidth and random-read rate."""

    name: config.Medium
    seq_bytes_per_s: float
    random_reads_per_s: float
    #: reads the OS page cache answers run while others wait on the disk (many readers in
    #: flight), so they add nothing to a disk-bound gather
    overlaps_cached: bool = False
    #: bytes out per second of a compressed copy decompressed by the GPU (nvCOMP) once its
    #: chunks are read, and the fixed seconds of that call (one per query, shared by its
    #: streamed columns); 0: on host threads (``decompress_rate``)
    inflate_bytes_per_s: float = 0.0
    inflate_call_s: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", config.Medium(self.name))  # a typo is an error


#: A disk read by the CPU engine, whose pages are read from one thread: its random-read
#: rate is what one reader gets, not the disk's. Calibrated: see docs/measurements.md#cost-model-constants.
FILE = Medium("file", 1.7e9, 4.0e4)
#: The same disk read through the GPU file backend's queues (thousands of requests in
#: flight, compiled host workers reading); a row group's other members come from the OS
#: page cache meanwhile. Calibrated: see docs/measurements.md#cost-model-constants.
QUEUE = Medium("queue", 1.6e9, 8.0e4, overlaps_cached=True)
#: The queue's disk where compressed copies are decompressed on the GPU (``gpu.inflate``):
#: a query's streamed columns in one nvCOMP call once they are read. Calibrated: see
#: docs/measurements.md#cost-model-constants.
NVCOMP = Medium("nvcomp", 1.6e9, 8.0e4, overlaps_cached=True, inflate_bytes_per_s=30e9,
                inflate_call_s=0.006)
#: The streamed columns that share a query's decompression call, as the planner costs a
#: column on its own (Q1-Q6 stream about three).
COLUMNS_PER_CALL = 3
#: Files already in the OS page cache (warm): memory-speed reads, system call per request.
CACHED = Medium("cached", 8e9, 2.0e6)
#: Pinned host memory read by the GPU over PCIe, 32-byte sectors at any address.
#: Calibrated: see docs/measurements.md#cost-model-constants.
HOST = Medium("host", 50e9, 1.5e9)
#: GPU memory.
GPU = Medium("gpu", 3.0e12, 1.0e10)
MEDIA: dict[config.Medium, Medium] = {m.name: m for m in (FILE, QUEUE, NVCOMP, CACHED, HOST, GPU)}


#: Disk media planned as another where the OS page cache holds at least ``WHOLLY`` of what
#: the other medium's plan reads (each column's pages, compressed copy or row-group copy,
#: as its path reads): over cached files, the GPU file backend's queue plans (gathers from
#: memory) beat its nvCOMP plans (a decompression call per query). ``FILE`` is not here:
#: the CPU engine's disk plans are the quicker ones over cached files too
#: (docs/measurements.md#the-os-page-cache-in-the-plan).
WHOLLY_CACHED: dict[config.Medium, Medium] = {config.Medium.NVCOMP: QUEUE}
WHOLLY = 0.9


def reads_page_cache(medium: config.Medium) -> bool:
    """Whether plans over ``medium`` depend on what the OS page cache holds."""
    return medium in WHOLLY_CACHED


def touch_probability(selectivity: float, rows_per_page: int) -> float:
    """Probability that a page of ``rows_per_page`` rows holds at least one match."""
    s = min(max(selectivity, 0.0), 1.0)
    return 1.0 - (1.0 - s) ** rows_per_page


def gather_cost(n_pages: int, rows_per_page: int, selectivity: float, page_size: int,
                medium: Medium) -> tuple[float, float]:
    """Estimated (pages read, seconds) of gathering only the pages that hold a match.

    Adjacent touched pages coalesce into one request, so requests = touched runs.
    """
    p = touch_probability(selectivity, rows_per_page)
    pages = n_pages * p
    requests = max(pages * (1.0 - p), min(pages, 1.0))
    return pages, requests / medium.random_reads_per_s + pages * page_size / medium.seq_bytes_per_s


#: zstd decompression per host thread, in bytes out, as the file backend's streams achieve
#: it (read, decompress, check, copy into the pinned buffer), which is well below what one
#: core decompresses alone. Calibrated: see docs/measurements.md#cost-model-constants.
DECOMPRESS_BYTES_PER_S = 0.25e9


def decompress_rate() -> float:
    return DECOMPRESS_BYTES_PER_S * min(8, os.cpu_count() or 1)


def inflate_time(out_bytes: float, medium: Medium, call_share: float = 1.0) -> float:
    """Seconds to decompress ``out_bytes`` of pages: on the GPU (``call_share`` of one
    call's fixed time, then its rate) where the medium can and that is quicker, else on host
    threads. Few bytes (a clustered plan's pruned chunks) decompress quicker on the host
    than the GPU's call costs."""
    host = out_bytes / decompress_rate()
    if not medium.inflate_bytes_per_s:
        return host
    return min(host, medium.inflate_call_s * call_share + out_bytes / medium.inflate_bytes_per_s)


def inflates_on_gpu(out_bytes: float, medium: Medium) -> bool:
    """Whether a query's streamed compressed columns (``out_bytes`` of pages in all)
    decompress on the GPU, in one call, rather than on host threads (made once per query)."""
    return (medium.inflate_bytes_per_s > 0
            and inflate_time(out_bytes, medium) < out_bytes / decompress_rate())


def compressed_time(n_pages: int, page_size: int, medium: Medium, stream_bytes: float) -> float:
    """Seconds to stream a column from its compressed copy: its bytes, then decompression
    (on the GPU, a column's share of the call, where the medium can and that is quicker:
    ``inflate_time``)."""
    read = 1.0 / medium.random_reads_per_s + stream_bytes / medium.seq_bytes_per_s
    return read + inflate_time(n_pages * page_size, medium, 1 / COLUMNS_PER_CALL)


def _pages_time(n_pages: int, page_size: int, medium: Medium) -> float:
    return 1.0 / medium.random_reads_per_s + n_pages * page_size / medium.seq_bytes_per_s


def use_compressed(n_pages: int, page_size: int, medium: Medium, stream_bytes: float | None) -> bool:
    """Whether a stream of the column is quicker from its compressed copy (on disk it
    usually is; from memory, decompressing costs more than it saves)."""
    return (stream_bytes is not None and compressed_time(n_pages, page_size, medium, stream_bytes)
            < _pages_time(n_pages, page_size, medium))


def stream_cost(n_pages: int, page_size: int, medium: Medium,
                stream_bytes: float | None = None) -> tuple[float, float]:
    """Estimated (pages read, seconds) of streaming a whole column: its pages, or its
    compressed copy (``stream_bytes`` of it) when that is quicker."""
    if use_compressed(n_pages, page_size, medium, stream_bytes):
        return float(n_pages), compressed_time(n_pages, page_size, medium, stream_bytes)
    return float(n_pages), _pages_time(n_pages, page_size, medium)


def choose_path(n_pages: int, rows_per_page: int, selectivity: float, page_size: int,
                medium: Medium, stream_bytes: float | None = None) -> tuple[AccessPath, float]:
    """``(GATHER | STREAM, estimated pages)`` for a dependent column: the cheaper one."""
    gp, gt = gather_cost(n_pages, rows_per_page, selectivity, page_size, medium)
    sp, st = stream_cost(n_pages, page_size, medium, stream_bytes)
    # a tie streams: one sequential read
    return (AccessPath.GATHER, gp) if gt < st else (AccessPath.STREAM, sp)
