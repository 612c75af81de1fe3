"""I/O accounting: per column, what was read, what a whole-column reader reads, what was needed."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from bamql.config import AccessPath, Role


def format_bytes(b: float) -> str:
    """``b`` bytes in binary units for EXPLAIN and the I/O tables: ``"1,234 B"``, ``"1.5 MiB"``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(b) < 1024 or unit == "TiB":
            return f"{b:,.0f} {unit}" if unit == "B" else f"{b:,.1f} {unit}"
        b /= 1024
    return f"{b}"


@dataclass
class ColumnIO:
    """What one column cost a query.

    ``bytes_read`` came from the medium (whole pages); ``whole_bytes`` is what a reader of
    whole columns (RAPIDS) moves for it; ``bytes_needed`` is the values the query used:
    every evaluated row of a predicate column, every matching row of a dependent column.
    """

    column: str
    role: Role
    path: AccessPath
    itemsize: int
    whole_bytes: int
    pages_read: int = 0
    bytes_read: int = 0
    values_needed: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    #: the column's pages (what a whole-column reader reads)
    whole_pages: int = 0

    @property
    def bytes_needed(self) -> int:
        return self.values_needed * self.itemsize

    @property
    def amplification(self) -> float:
        return self.bytes_read / self.bytes_needed if self.bytes_needed else float("inf")


@dataclass
class QueryStats:
    """Everything measured about one query run."""

    device: str
    backend: str
    rows: int
    rows_matched: int = 0
    seconds: float = 0.0
    compile_seconds: float = 0.0
    #: GPU: from the launch to the results on the host (the kernel and its copies); the
    #: rest of ``seconds`` is the engine's host-side work
    kernel_seconds: float = 0.0
    #: GPU: the kernel alone, timed by CUDA events on the device (no host-side work in it)
    gpu_seconds: float = 0.0
    setup_seconds: float = 0.0  # loading a table onto the device, charged to its first query
    io_reads: int = 0  # GPU file backend: page reads the kernel put on the submission queue
    io_depth: int = 0  # ... and the deepest queue (the host workers' peaks, summed)
    partition_seconds: list = field(default_factory=list)  # each partition's own time
    #: a partition's whole run (its statistics set up, the engine): what the engine's own
    #: time leaves out of it is per-partition overhead
    wall_seconds: float = 0.0
    partition_wall_seconds: list = field(default_factory=list)
    #: distributed: the client's wait for every worker's answer (Dask round trips included)
    dispatch_seconds: float = 0.0
    #: distributed: each worker's whole call on its worker; ``dispatch_seconds`` beyond the
    #: longest is what the Dask round trip cost
    worker_seconds: list = field(default_factory=list)
    #: distributed: each worker call's start and end (``time.monotonic``, a clock every
    #: process of one machine shares) less the client's send; how long the message took to
    #: arrive, and its answer to come back, where client and workers share a machine
    worker_spans: list = field(default_factory=list)
    #: distributed: from the client's send to the last answer received (before unpickling)
    answers_seconds: float = 0.0
    #: GPU: each partition's ``kernel_seconds``
    partition_kernel_seconds: list = field(default_factory=list)
    #: GPU: each partition's ``gpu_seconds``
    partition_gpu_seconds: list = field(default_factory=list)
    columns: dict[str, ColumnIO] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __getstate__(self) -> dict:  # picklable (Dask): the lock stays behind
        d = dict(self.__dict__)
        d.pop("_lock")
        return d

    def __setstate__(self, d: dict) -> None:
        self.__dict__.update(d)
        self._lock = threading.Lock()

    @classmethod
    def merged(cls, parts: list[QueryStats], label: str, backend, rows: int,
               seconds: float, partitioned: bool) -> QueryStats:
        """A query's statistics from its partitions': a table of one store reports its
        partition's as they are; a partitioned table's sum their I/O under ``label`` (such
        as ``cpu/dask``), with the whole run's ``seconds``."""
        if not partitioned and len(parts) == 1:
            return parts[0]
        stats = cls(label, backend, rows)
        for st in parts:
            stats.absorb(st)
        stats.seconds = seconds
        return stats

    def absorb(self, other: QueryStats) -> None:
        """Add another partition's statistics to these."""
        self.rows_matched += other.rows_matched
        self.compile_seconds = max(self.compile_seconds, other.compile_seconds)
        self.io_reads += other.io_reads
        self.partition_seconds.append(other.seconds)
        self.partition_kernel_seconds.append(other.kernel_seconds)
        self.partition_gpu_seconds.append(other.gpu_seconds)
        self.partition_wall_seconds.append(other.wall_seconds)
        self.io_depth = max(self.io_depth, other.io_depth)
        for name, c in other.columns.items():
            mine = self.columns.setdefault(name, ColumnIO(c.column, c.role, c.path, c.itemsize, 0))
            mine.whole_bytes += c.whole_bytes
            mine.whole_pages += c.whole_pages
            mine.pages_read += c.pages_read
            mine.bytes_read += c.bytes_read
            mine.values_needed += c.values_needed
            mine.cache_hits += c.cache_hits
            mine.cache_misses += c.cache_misses

    def add(self, column: str, pages: int, nbytes: int, needed: int = 0) -> None:
        with self._lock:
            c = self.columns[column]
            c.pages_read += pages
            c.bytes_read += nbytes
            c.values_needed += needed

    @property
    def bytes_read(self) -> int:
        return sum(c.bytes_read for c in self.columns.values())

    @property
    def whole_bytes(self) -> int:
        return sum(c.whole_bytes for c in self.columns.values())

    @property
    def bytes_needed(self) -> int:
        return sum(c.bytes_needed for c in self.columns.values())

    @property
    def amplification(self) -> float:
        """Bytes moved / bytes needed (1.0 is ideal)."""
        return self.bytes_read / self.bytes_needed if self.bytes_needed else float("inf")

    @property
    def pages_skipped(self) -> float | None:
        """The share of the read columns' pages not read (zone maps, value sets and gathers
        of matching rows only skip them); None when no column's pages are known."""
        whole = sum(c.whole_pages for c in self.columns.values())
        read = sum(c.pages_read for c in self.columns.values())
        return max(0.0, 1.0 - read / whole) if whole else None

    @property
    def whole_amplification(self) -> float:
        """What the amplification of a whole-column reader would be."""
        return self.whole_bytes / self.bytes_needed if self.bytes_needed else float("inf")

    def to_dict(self) -> dict:
        return {
            "device": self.device, "backend": self.backend, "rows": self.rows,
            "rows_matched": self.rows_matched, "seconds": self.seconds,
            "compile_seconds": self.compile_seconds, "kernel_seconds": self.kernel_seconds,
            "gpu_seconds": self.gpu_seconds,
            "setup_seconds": self.setup_seconds,
            "io_reads": self.io_reads, "io_depth": self.io_depth,
            "partition_seconds": self.partition_seconds,
            "partition_wall_seconds": self.partition_wall_seconds,
            "dispatch_seconds": self.dispatch_seconds,
            "worker_seconds": self.worker_seconds,
            "bytes_read": self.bytes_read,
            "whole_bytes": self.whole_bytes, "bytes_needed": self.bytes_needed,
            "amplification": self.amplification, "whole_amplification": self.whole_amplification,
            "pages_skipped": self.pages_skipped,
            "columns": {k: {"role": c.role, "path": c.path, "pages_read": c.pages_read,
                            "bytes_read": c.bytes_read, "whole_bytes": c.whole_bytes,
                            "whole_pages": c.whole_pages,
                            "bytes_needed": c.bytes_needed, "cache_hits": c.cache_hits,
                            "cache_misses": c.cache_misses}
                        for k, c in self.columns.items()},
        }

    def table_text(self) -> str:
        """The per-column I/O table of EXPLAIN ANALYZE."""
        fb = format_bytes

        lines = [f"  {'column':<24} {'role':<9} {'path':<6} {'pages':>9} {'read':>11} "
                 f"{'whole col':>11} {'needed':>11} {'ampl.':>7}"]
        for c in self.columns.values():
            amp = f"{c.amplification:.2f}x" if c.bytes_needed else "-"
            lines.append(f"  {c.column:<24} {c.role:<9} {c.path:<6} {c.pages_read:>9,} "
                         f"{fb(c.bytes_read):>11} {fb(c.whole_bytes):>11} {fb(c.bytes_needed):>11} "
                         f"{amp:>7}")
            if c.cache_hits or c.cache_misses:
                lines[-1] += f"  cache {c.cache_hits:,} hits / {c.cache_misses:,} misses"
        pages = sum(c.pages_read for c in self.columns.values())
        lines.append(f"  {'total':<24} {'':<9} {'':<6} {pages:>9,} "
                     f"{fb(self.bytes_read):>11} {fb(self.whole_bytes):>11} {fb(self.bytes_needed):>11} "
                     f"{self.amplification:>6.2f}x")
        lines.append(f"  rows matched: {self.rows_matched:,} of {self.rows:,}; "
                     f"amplification {self.amplification:.2f}x (whole-column reader: "
                     f"{self.whole_amplification:.2f}x); {self.seconds * 1e3:.1f} ms on "
                     f"{self.device}/{self.backend}"
                     + (f", {self.kernel_seconds * 1e3:.1f} ms of it from launch to results"
                        if self.kernel_seconds else "")
                     + (f" ({self.gpu_seconds * 1e3:.1f} ms the kernel on the device)"
                        if self.gpu_seconds else "")
                     + (f" (+{self.compile_seconds * 1e3:.0f} ms compiling)" if self.compile_seconds else "")
                     + (f" (+{self.setup_seconds:.2f} s loading the table)" if self.setup_seconds else ""))
        if self.pages_skipped is not None:
            whole = sum(c.whole_pages for c in self.columns.values())
            lines.append(f"  pages read: {pages:,} of {whole:,}; {self.pages_skipped:.2%} skipped "
                         "(pruned by zone maps and value sets, or holding no matching row)")
        if self.partition_wall_seconds:
            walls = self.partition_wall_seconds
            line = (f"  {len(walls)} partitions: {sum(self.partition_seconds) * 1e3:.1f} ms in the "
                    f"engines, {min(walls) * 1e3:.1f}-{max(walls) * 1e3:.1f} ms per partition call")
            if self.dispatch_seconds:  # beyond the busiest worker's calls: round trips
                line += f"; the client waited {self.dispatch_seconds * 1e3:.1f} ms for the workers"
            if self.worker_seconds:
                line += f" (the longest worker call took {max(self.worker_seconds) * 1e3:.1f} ms)"
            lines.append(line)
        if self.io_reads:
            lines.append(f"  GPU-initiated reads: {self.io_reads:,} through the submission queue, "
                         f"queue depth up to {self.io_depth:,} (host workers' peaks, summed)")
        return "\n".join(lines)
