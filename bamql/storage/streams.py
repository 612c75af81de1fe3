"""Compressed stream copies: what a sequential read of a whole column moves from disk.

A cold stream of a column reads every page of it at the disk's sequential rate, while a
whole-column reader such as RAPIDS reads compressed ORC. The store therefore keeps, beside
the uncompressed pages (which gathers and the page cache use, one page per value), a zstd
copy of each column in chunks of ``chunk_pages`` pages (``zst-000.bin``). A stream or scan
reads the chunks that cover its pages and decompresses them on the host, or, on a GPU with
nvCOMP, on the GPU (``gpu.inflate``); the pages it gets are checked against the same page
checksums. Each chunk also has a checksum of its compressed bytes (``zst:sum``), checked
before a chunk goes to the GPU: nvCOMP's decoder trusts its input, and a damaged chunk must
be a clear error, not a fault on the device.

A chunk of a column whose values are wider than a byte is compressed *byte-shuffled*
(``shuffle``, as Blosc and Parquet's BYTE_STREAM_SPLIT do): byte ``k`` of value ``i`` moves to
``k * n + i`` for the chunk's ``n`` values, so the high bytes of small numbers and timestamps
lie side by side, and zstd finds the runs that interleaved values hide. A column is shuffled
where that makes a sample of its chunks smaller (a column of mostly zeros with rare values
compresses better as it is). The manifest records each shuffled column's width
(``StreamMeta.shuffle``); a reader unshuffles after decompressing (on the GPU, a kernel
does: ``gpu.inflate``). Bit-packed columns are not shuffled: their codes do not sit on byte
boundaries.

The planner streams from the copy only where the cost model finds it quicker
(``physical.cost.compressed_time``); what the copies save is in docs/measurements.md.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numba
import numpy as np
import pyarrow as pa

from bamql.errors import IngestError
from bamql.lazyjit import guard_compiles
from bamql.storage.format import ColumnMeta, StreamMeta
from bamql.storage.nativeio import DiskLayout, read_into

guard_compiles()  # numba compiles with the cyclic GC paused (bamql.lazyjit)

STREAM_FILE = "zst-000.bin"
CODEC = "zstd"
#: zstd's level: 3 makes the shuffled taxi columns' copies a little smaller than 1 does at
#: about the same ingest time; what a chunk costs to decompress hardly depends on it.
LEVEL = 3
#: Uncompressed bytes per chunk: large enough for the codec (zstd compresses the taxi
#: columns about as well in 64 KiB as in 256 KiB chunks), small enough that a morsel wastes
#: little decompressing a chunk it only partly needs, and many chunks per column: a GPU decompresses
#: the chunks of a batch in parallel.
CHUNK_BYTES = 64 << 10
#: Chunks of a column (spread over it) compressed both ways to choose whether to shuffle it.
SAMPLE_CHUNKS = 8


class CorruptChunk(Exception):
    """A chunk of the compressed copy that cannot be read back."""


def codec() -> pa.Codec:
    """The copy's codec (zstd at ``LEVEL``; its decompression reads any level)."""
    return pa.Codec(CODEC, compression_level=LEVEL)


def shuffle(raw: np.ndarray, width: int) -> np.ndarray:
    """The bytes ``raw`` (uint8, a multiple of ``width`` long) byte-shuffled: byte ``k`` of
    element ``i`` to position ``k * n + i`` for ``n`` elements (a copy; ``raw`` if width 1)."""
    if width <= 1:
        return raw
    return np.ascontiguousarray(raw.reshape(-1, width).T).reshape(-1)


@numba.njit(nogil=True, cache=True)
def _unshuffle2(src: np.ndarray, dst: np.ndarray) -> None:  # pragma: no cover - compiled
    n = dst.shape[0]
    for i in range(n):
        dst[i] = np.uint16(src[i]) | np.uint16(src[n + i]) << np.uint16(8)


@numba.njit(nogil=True, cache=True)
def _unshuffle4(src: np.ndarray, dst: np.ndarray) -> None:  # pragma: no cover - compiled
    n = dst.shape[0]
    for i in range(n):
        dst[i] = (np.uint32(src[i]) | np.uint32(src[n + i]) << np.uint32(8)
                  | np.uint32(src[2 * n + i]) << np.uint32(16)
                  | np.uint32(src[3 * n + i]) << np.uint32(24))


@numba.njit(nogil=True, cache=True)
def _unshuffle8(src: np.ndarray, dst: np.ndarray) -> None:  # pragma: no cover - compiled
    n = dst.shape[0]
    for i in range(n):
        v = np.uint64(0)
        for b in range(8):
            v |= np.uint64(src[b * n + i]) << np.uint64(8 * b)
        dst[i] = v


#: per width, the loop that unshuffles into little-endian words (a word per element, which
#: the compiler vectorizes; a loop over bytes would not keep up with zstd) and their type
_UNSHUFFLE = {2: (_unshuffle2, np.dtype("<u2")), 4: (_unshuffle4, np.dtype("<u4")),
              8: (_unshuffle8, np.dtype("<u8"))}


def unshuffle(raw: np.ndarray, width: int) -> np.ndarray:
    """The inverse of ``shuffle``: the element bytes of shuffled ``raw`` (uint8, a multiple
    of ``width`` long) back in order, a new array (``raw`` if width 1)."""
    if width <= 1:
        return raw
    loop, dtype = _UNSHUFFLE[width]
    out = np.empty(raw.size // width, dtype)
    loop(raw, out)
    return out.view(np.uint8)


@numba.njit(nogil=True, cache=True)
def chunk_hash(blob: np.ndarray) -> np.uint64:
    """The checksum of one compressed chunk (its bytes, ``uint8``, at any alignment): the
    page checksum's mix over its little-endian 8-byte words, the last one zero-padded, then
    its length."""
    prime = np.uint64(0x9E3779B97F4A7C15)
    n = blob.shape[0]
    full = n - n % 8
    h = np.uint64(0xCBF29CE484222325)
    for j in range(0, full, 8):
        w = (np.uint64(blob[j]) | np.uint64(blob[j + 1]) << np.uint64(8)
             | np.uint64(blob[j + 2]) << np.uint64(16) | np.uint64(blob[j + 3]) << np.uint64(24)
             | np.uint64(blob[j + 4]) << np.uint64(32) | np.uint64(blob[j + 5]) << np.uint64(40)
             | np.uint64(blob[j + 6]) << np.uint64(48) | np.uint64(blob[j + 7]) << np.uint64(56))
        h = (h ^ w) * prime
        h ^= h >> np.uint64(29)
    if full < n:
        w = np.uint64(0)
        for j in range(full, n):
            w |= np.uint64(blob[j]) << np.uint64(8 * (j - full))
        h = (h ^ w) * prime
        h ^= h >> np.uint64(29)
    return (h ^ np.uint64(n)) * prime


def chunk_sums(raw: np.ndarray, offs: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """``chunk_hash`` of each chunk ``raw[offs[k] : offs[k] + lens[k]]``."""
    return np.array([chunk_hash(raw[int(o) : int(o) + int(n)]) for o, n in zip(offs, lens,
                                                                               strict=True)],
                    np.uint64)


def write_streams(d: Path, columns: Sequence[ColumnMeta], page_size: int, n_volumes: int,
                  total_pages: int) -> tuple[StreamMeta, np.ndarray, np.ndarray, np.ndarray]:
    """Write the compressed copy of every column of a store whose volumes are complete.

    Returns its metadata and, per chunk (columns in order), the byte offset, the length and
    the checksum (``chunk_hash``).
    """
    cp = max(1, CHUNK_BYTES // page_size)
    vol_fds = np.array([os.open(d / f"vol-{v:03d}.bin", os.O_RDONLY) for v in range(n_volumes)],
                       np.int32)
    layout = DiskLayout.volumes(vol_fds, n_volumes, total_pages, page_size)
    first: dict[str, int] = {}
    offs: list[int] = []
    lens: list[int] = []
    sums: list[int] = []
    pos = 0
    cd = codec()
    widths: dict[str, int] = {}

    def pages_of(c: ColumnMeta, k: int) -> np.ndarray:
        p0, p1 = k * cp, min((k + 1) * cp, c.n_pages)
        buf = np.empty((p1 - p0, page_size), np.uint8)
        pages = np.arange(c.first_page + p0, c.first_page + p1, dtype=np.int64)
        if read_into(layout, pages, buf, np.arange(p1 - p0, dtype=np.int64)) >= 0:
            raise IngestError(f"reading column {c.name!r} back for its compressed copy failed")
        return buf.reshape(-1)

    def width_of(c: ColumnMeta, n_chunks: int) -> int:
        """``c.shuffle_width`` if shuffling makes a sample of its chunks smaller, else 1."""
        w = c.shuffle_width
        if w == 1 or not n_chunks:
            return 1
        sample = np.unique(np.linspace(0, n_chunks - 1, min(n_chunks, SAMPLE_CHUNKS)).astype(int))
        plain = shuffled = 0
        for k in sample.tolist():
            raw = pages_of(c, k)
            plain += len(cd.compress(raw, asbytes=True))
            shuffled += len(cd.compress(shuffle(raw, w), asbytes=True))
        return w if shuffled < plain else 1

    def chunk(c: ColumnMeta, k: int) -> bytes:
        return cd.compress(shuffle(pages_of(c, k), widths[c.name]), asbytes=True)

    fd = os.open(d / STREAM_FILE, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    try:
        with ThreadPoolExecutor(min(8, os.cpu_count() or 1)) as ex:
            for c in columns:
                first[c.name] = len(offs)
                n_chunks = -(-c.n_pages // cp)
                widths[c.name] = width_of(c, n_chunks)
                # the codec runs outside the GIL: chunks compress in parallel, in order
                for blob in ex.map(lambda k, c=c: chunk(c, k), range(n_chunks)):
                    os.pwrite(fd, blob, pos)
                    sums.append(chunk_hash(np.frombuffer(blob, np.uint8)))
                    offs.append(pos)
                    lens.append(len(blob))
                    pos += len(blob)
        os.fsync(fd)
    finally:
        os.close(fd)
        for v in vol_fds:
            os.close(int(v))
    meta = StreamMeta(STREAM_FILE, CODEC, cp, first, pos,
                      {n: w for n, w in widths.items() if w > 1})
    return meta, np.array(offs, np.int64), np.array(lens, np.int64), np.array(sums, np.uint64)


def read_chunks(fd: int, meta: StreamMeta, offs: np.ndarray, lens: np.ndarray, c: ColumnMeta,
                p0: int, p1: int, page_size: int, out: np.ndarray, pool=None) -> int:
    """Pages ``p0 .. p1 - 1`` of column ``c`` (relative to its first page) from the
    compressed copy into ``out[: p1 - p0]``, chunks decompressed on ``pool``'s threads when
    given; returns the compressed bytes read. Raises ``CorruptChunk`` when the copy is
    truncated or a chunk does not decompress."""
    cp = meta.chunk_pages
    k0, k1 = p0 // cp, (p1 - 1) // cp + 1
    base = meta.first_chunk[c.name]
    width = meta.shuffle.get(c.name, 1)
    a = int(offs[base + k0])
    b = int(offs[base + k1 - 1] + lens[base + k1 - 1])
    raw = os.pread(fd, b - a, a)  # a column's chunks lie one after another: one read
    if len(raw) != b - a:
        raise CorruptChunk("the compressed copy is truncated")

    def one(k: int) -> None:
        c0, c1 = k * cp, min((k + 1) * cp, c.n_pages)
        s0 = int(offs[base + k]) - a
        blob = raw[s0 : s0 + int(lens[base + k])]
        try:  # the codec releases the GIL: chunks decompress in parallel
            pages = np.frombuffer(codec().decompress(blob, decompressed_size=(c1 - c0) * page_size,
                                                     asbytes=True), np.uint8)
        except (OSError, pa.ArrowException) as e:
            raise CorruptChunk(f"chunk {k} does not decompress ({e})") from None
        pages = unshuffle(pages, width).reshape(c1 - c0, page_size)
        lo, hi = max(p0, c0), min(p1, c1)
        out[lo - p0 : hi - p0] = pages[lo - c0 : hi - c0]

    if pool is None or k1 - k0 < 2:
        for k in range(k0, k1):
            one(k)
    else:
        list(pool.map(one, range(k0, k1)))
    return b - a
