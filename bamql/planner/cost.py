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

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", config.Medium(self.name))  # a typo is an error


#: A disk read by the CPU engine: 1.7 GB/s sequential (the GPU machine's virtio disk,
#: bam.md). Random reads: that disk serves ~100 k/s only to many threads; the CPU engine
#: reads pages from one thread, measured at ~40 k/s effective (Q6, 20 M rows, 4 KiB pages,
#: cold: bench/results/cpu-vm-20M.json), which is the rate the planner must plan with.
FILE = Medium("file", 1.7e9, 4.0e4)
#: The same disk read through the GPU file backend's queues (thousands of requests queued,
#: 64 compiled host workers reading), measured on the H100 machine at 200 M rows, cold,
#: 512 B pages, scaled-integer floats, in three runs (``bench/results/h100/h100-200M-file-
#: {scaled,scaled-v2,final}.json``): streams of 2-5 columns ran at 1.3-2.0 GB/s (mean ~1.6);
#: Q4-Q6 through a row group read ~94 k disk blocks in 1.14-1.70 s, of which ~0.25 s is the
#: predicate stream: 60-107 k reads/s (mean ~80 k; Q4's 4 members took 1.64-1.77 s that way
#: in the last run, against 1.19-1.25 s streamed in the two before, so Q4 streams again).
#: The other members' pages (3-5 per block) come from the OS page cache meanwhile.
QUEUE = Medium("queue", 1.6e9, 8.0e4, overlaps_cached=True)
#: Files already in the OS page cache (warm): memory-speed reads, system call per request.
CACHED = Medium("cached", 8e9, 2.0e6)
#: Pinned host memory read by the GPU over PCIe: 50 GB/s, 32-byte sectors at any address.
HOST = Medium("host", 50e9, 1.5e9)
#: GPU memory.
GPU = Medium("gpu", 3.0e12, 1.0e10)
MEDIA: dict[config.Medium, Medium] = {m.name: m for m in (FILE, QUEUE, CACHED, HOST, GPU)}


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


#: zstd decompression per host thread, in bytes out, as the file backend's streams achieve it
#: (read, decompress, check, copy into the pinned buffer; 8 threads): measured on the H100
#: machine, 200 M rows, cold (``bench/results/h100/h100-200M-file-zstd.json``), where Q1-Q6
#: streamed 0.76-2.7 GB of pages from 0.46-1.1 GB of zstd in 0.48-1.40 s, i.e. 1.6-2.2 GB/s
#: out, no faster than the uncompressed pages from that disk (v2, same queries). A single
#: core decompresses 0.9-6.5 GB/s in a script; the rest is the copying and checking.
DECOMPRESS_BYTES_PER_S = 0.25e9


def decompress_rate() -> float:
    return DECOMPRESS_BYTES_PER_S * min(8, os.cpu_count() or 1)


def compressed_time(n_pages: int, page_size: int, medium: Medium, stream_bytes: float) -> float:
    """Seconds to stream a column from its compressed copy: its bytes, then decompression."""
    return (1.0 / medium.random_reads_per_s + stream_bytes / medium.seq_bytes_per_s
            + n_pages * page_size / decompress_rate())


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
