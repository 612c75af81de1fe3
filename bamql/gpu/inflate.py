"""Compressed stream copies decompressed on the GPU (nvCOMP), for the ``file`` backend.

A column the plan streams from its zstd copy (``storage.streams``) is read from disk as
compressed chunks, in parallel reads, each checked on the host against its chunk checksum
(nvCOMP's decoder trusts its input: a damaged chunk must be a one-line error, not a fault
on the device); the chunks are copied to the GPU and decompressed there in one batch (each
call of nvCOMP's Python API costs milliseconds whatever its size, so a column is one call),
and the pages are checked against their page checksums by a kernel. Chunks that the store
byte-shuffled (``storage.streams.shuffle``) decompress into a scratch buffer, from which a
kernel unshuffles them into place. The column lands in
GPU memory, where the query's kernel reads it (and later queries, if it stays resident).

The disk then delivers compressed bytes and the host's threads only read and check them:
the host's zstd decompression (``physical.cost.DECOMPRESS_BYTES_PER_S``) is off the path.
A query whose chunks are too few to repay the call (``physical.cost.inflates_on_gpu``: a
clustered plan's pruned reads) is left to the host by the file backend.
Where nvCOMP is missing (or in numba's CUDA simulator) the backend decompresses on the
host as before (``make`` returns None).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import numpy as np
from numba import cuda

from bamql.errors import StoreError
from bamql.gpu import pagecheck
from bamql.gpu.device import typed
from bamql.kernels.diskcache import cuda_fast_loads
from bamql.lazyjit import njit
from bamql.storage.store import PageStore
from bamql.storage.streams import chunk_hash

#: compressed bytes per read: several reads in flight keep the disk busy
READ_BYTES = 2 << 20


class Decoder(Protocol):
    """Decompresses a batch of zstd chunks already in GPU memory."""

    #: the alignment (bytes) a chunk needs in GPU memory
    align: int

    def decode(self, comp, in_offs: Sequence[int], in_lens: Sequence[int], out,
               out_offs: Sequence[int], out_lens: Sequence[int]) -> None:
        """Chunk ``k`` at ``comp[in_offs[k] :][: in_lens[k]]`` into ``out[out_offs[k] :]
        [: out_lens[k]]`` (both uint8 device arrays), ordered on the default stream."""


class NvcompDecoder:
    """zstd chunks decompressed by nvCOMP (``nvidia-nvcomp-cu13``), on the default stream."""

    def __init__(self) -> None:
        from nvidia import nvcomp

        self._nv = nvcomp
        self._codec = nvcomp.Codec(algorithm="Zstd", bitstream_kind=nvcomp.BitstreamKind.RAW,
                                   cuda_stream=0)
        self.align = max(1, int(self._codec.get_required_decompression_alignment()))

    def decode(self, comp, in_offs, in_lens, out, out_offs, out_lens) -> None:
        nv = self._nv
        srcs = nv.as_arrays(comp, [int(x) for x in in_offs], [int(x) for x in in_lens], 0)
        dsts = nv.as_arrays(out, [int(x) for x in out_offs], [int(x) for x in out_lens], 0)
        self._codec.decode(srcs, out=dsts)


class HostDecoder:
    """The same contract on the host (pyarrow's zstd, then a copy to the device): what the
    tests run in numba's CUDA simulator, where nvCOMP cannot."""

    align = 8

    def decode(self, comp, in_offs, in_lens, out, out_offs, out_lens) -> None:
        from bamql.storage.streams import codec

        host = comp.copy_to_host()
        cd = codec()
        for a, n, o, m in zip(in_offs, in_lens, out_offs, out_lens, strict=True):
            pages = np.frombuffer(cd.decompress(host[a : a + n], decompressed_size=m,
                                                asbytes=True), np.uint8)
            out[o : o + m].copy_to_device(pages)


def make(cuda) -> GpuInflater | None:
    """The inflater of a real GPU with nvCOMP installed; None otherwise (the host path)."""
    from bamql.gpu.device import SIMULATOR

    if SIMULATOR:
        return None
    try:
        return GpuInflater(cuda, NvcompDecoder())
    except Exception:  # nvCOMP missing or unusable: the host decompresses as before
        return None


def needed_chunks(p0: np.ndarray, p1: np.ndarray, chunk_pages: int) -> np.ndarray:
    """The chunks (sorted, unique) that hold pages ``p0[i] .. p1[i] - 1``."""
    if not len(p0):
        return np.zeros(0, np.int64)
    k0, k1 = p0 // chunk_pages, (p1 - 1) // chunk_pages + 1
    return np.unique(np.concatenate([np.arange(a, b) for a, b in zip(k0, k1, strict=True)]))


def batches(chunks: np.ndarray, lens: np.ndarray, max_bytes: int) -> list[tuple[int, int]]:
    """``chunks`` cut into ``[i, j)`` index runs of consecutive chunks of at most
    ``max_bytes`` compressed (at least one chunk each): each is one read."""
    cuts = _batch_cuts(np.asarray(chunks, np.int64), np.asarray(lens, np.int64), max_bytes)
    return list(zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True))


@njit(nogil=True, cache=True)
def _batch_cuts(chunks: np.ndarray, lens: np.ndarray, max_bytes: int) -> np.ndarray:
    """``batches``' runs as their bounds ``0 = c[0] < c[1] < ... = len(chunks)``."""
    out = np.empty(len(chunks) + 1, np.int64)
    out[0] = 0
    m, size = 1, 0
    for j in range(len(chunks)):
        n = lens[chunks[j]]
        if j > 0 and (chunks[j] != chunks[j - 1] + 1 or size + n > max_bytes):
            out[m] = j
            m += 1
            size = 0
        size += n
    if len(chunks):
        out[m] = len(chunks)
        m += 1
    return out[:m]


@njit(nogil=True, cache=True)
def place_chunks(buf: np.ndarray, src: np.ndarray, dst: np.ndarray, lens: np.ndarray,
                 sums: np.ndarray) -> int:
    """Check chunk ``k`` at ``buf[src[k]:][:lens[k]]`` against ``sums[k]`` and move it down
    to ``buf[dst[k]:]``; ``dst[k] <= src[k]`` and chunks in order, so a forward copy never
    overwrites bytes still to be moved. Returns the first bad chunk's index, or -1."""
    for k in range(len(src)):
        s, d, n = src[k], dst[k], lens[k]
        if chunk_hash(buf[s : s + n]) != sums[k]:
            return k
        if d != s:
            for x in range(n):
                buf[d + x] = buf[s + x]
    return -1


class GpuInflater:
    """Reads columns' compressed chunks and decompresses them into GPU memory.

    Parameters
    ----------
    cuda
        ``numba.cuda`` (or its simulator).
    decoder
        What decompresses a batch on the device (``NvcompDecoder``; ``HostDecoder`` in the
        simulator).
    """

    def __init__(self, cuda, decoder: Decoder) -> None:
        self.cuda = cuda
        self.decoder = decoder
        # per reading thread: its pinned staging bytes (a read lands there and goes on to
        # the GPU from there, so no buffer the size of a whole query is pinned)
        self._staging = pagecheck.Staging(cuda, READ_BYTES + (64 << 10))
        self._comp = None  # device bytes the chunks are copied to, grown as needed
        self._scratch = None  # device bytes shuffled chunks decompress into, grown as needed

    def _device(self, n: int):
        if self._comp is None or self._comp.size < n:
            self._comp = self.cuda.device_array(max(n, 1 << 20), np.uint8)
        return self._comp

    def read(self, store: PageStore, items: Sequence[tuple], out, pool: ThreadPoolExecutor,
             sums: dict, needs: Sequence[np.ndarray] | None = None) -> list[int]:
        """Columns' pages from the compressed copy into GPU memory, every chunk and page
        checked, all in one decode call.

        Parameters
        ----------
        items
            ``(column, p0, p1, byte offset)``: pages ``p0[i] .. p1[i] - 1`` (relative to the
            column's first page) go to ``out[offset + page * page_size :]``.
        out
            uint8 device array holding each column's pages at its offset.
        sums
            The store's columns' page checksums on the GPU, filled as needed.
        needs
            Per item, its ``needed_chunks`` where the caller has them already.

        Returns the compressed bytes read per item.
        """
        ps, cp = store.page_size, store.manifest.streams.chunk_pages
        align = self.decoder.align
        cols = []  # per item: column, needed chunks, offsets, lengths, sums, first slot
        n_slots = 0
        if needs is None:
            needs = [needed_chunks(p0, p1, cp) for _, p0, p1, _ in items]
        for (c, _, _, base), need in zip(items, needs, strict=True):
            k_base, offs, lens = store.stream_chunks(c.name)
            cols.append((c, need, offs, lens, store.zst_sums[k_base : k_base + len(offs)],
                         n_slots, base))
            n_slots += len(need)
        if not n_slots:
            return [0] * len(items)
        in_len = np.concatenate([lens[need] for _, need, _, lens, *_ in cols])
        slot = (in_len + align - 1) // align * align
        pos = np.concatenate([[0], np.cumsum(slot)[:-1]])  # each chunk's place in the staging
        comp = self._device(int(slot.sum()))

        def fetch(job: tuple) -> None:
            """One read of consecutive chunks into the end of this thread's staging, each
            chunk checked and moved down to its aligned place in compiled code (no per-chunk
            Python under the GIL), then copied to the GPU (while other threads read). The
            store checks at open that a column's chunks follow one another, so the read is
            the chunks alone and each one's aligned place lies at or below where it landed."""
            (c, need, offs, lens, zsums, s0, _), i, j = job
            ks = need[i:j]
            a, b = int(offs[ks[0]]), int(offs[ks[-1]] + lens[ks[-1]])
            to = pos[s0 + i : s0 + j]
            at = int(to[0])
            span = int(to[-1]) + int(lens[ks[-1]]) - at
            staging = self._staging.get(span)
            store.read_compressed(a, staging[span - (b - a) : span])
            bad = place_chunks(staging, offs[ks] - a + (span - (b - a)), to - at, lens[ks],
                               zsums[ks])
            if bad >= 0:
                raise StoreError(f"store {store.path}: compressed copy of column {c.name!r}: "
                                 f"chunk {int(ks[bad])} fails its checksum; the store is corrupt")
            comp[at : at + span].copy_to_device(staging[:span])

        jobs = [(col, i, j) for col in cols for i, j in batches(col[1], col[3], READ_BYTES)]
        list(pool.map(fetch, jobs))
        out_off = np.concatenate([base + need * cp * ps for _, need, *_, base in cols])
        out_len = np.concatenate([(np.minimum((need + 1) * cp, c.n_pages) - need * cp) * ps
                                  for c, need, *_ in cols])
        self._decode(store, cols, comp, pos, in_len, out, out_off, out_len)
        for c, need, *_, base in cols:
            if len(need):
                words = typed(out, np.uint64, base, c.n_pages * store.page_size // 8)
                pagecheck.verify(self.cuda, store, c, words, need, cp, sums)
        return [int(lens[need].sum()) for _, need, _, lens, *_ in cols]

    def _decode(self, store: PageStore, cols: list[tuple], comp, in_offs: np.ndarray,
                in_lens: np.ndarray, out, out_offs: np.ndarray, out_lens: np.ndarray) -> None:
        """The decoder's one call for the chunks of ``cols`` (``read``'s per item tuples,
        column first, needed chunks second), ordered as the offsets and lengths are. Where
        none is byte-shuffled, it decompresses straight into ``out``; else every chunk goes
        to the scratch buffer and a kernel writes it into ``out``, unshuffled where its
        column's copy is shuffled (one call either way: each costs milliseconds)."""
        shuffle = store.manifest.streams.shuffle
        width = np.concatenate([np.full(len(need), shuffle.get(c.name, 1), np.int64)
                                for c, need, *_ in cols])
        if (width <= 1).all():
            self.decoder.decode(comp, in_offs, in_lens, out, out_offs, out_lens)
            return
        align = self.decoder.align
        slot = (out_lens + align - 1) // align * align
        at = np.concatenate([[0], np.cumsum(slot)[:-1]]).astype(np.int64)
        need_bytes = int(slot.sum())
        if self._scratch is None or self._scratch.size < need_bytes:
            self._scratch = self.cuda.device_array(max(need_bytes, 1 << 20), np.uint8)
        self.decoder.decode(comp, in_offs, in_lens, self._scratch, at, out_lens)
        cuda = self.cuda
        # the words a thread writes: a chunk lands at a whole page of ``out``
        words = [typed(out, t) for t in (np.uint16, np.uint32, np.uint64)]
        _unshuffle[len(width), 128](self._scratch, cuda.to_device(at), out, *words,
                                    cuda.to_device(np.asarray(out_offs, np.int64)),
                                    cuda.to_device(np.asarray(out_lens, np.int64)),
                                    cuda.to_device(width))

@cuda_fast_loads
@cuda.jit(cache=True)
def _unshuffle(src, src_offs, dst, dst16, dst32, dst64, dst_offs, lens, widths):
    """Block ``k`` writes chunk ``k`` (``lens[k]`` bytes at ``src[src_offs[k]:]``) to
    ``dst[dst_offs[k]:]``, undoing its byte shuffle of width ``widths[k]`` (1: a copy):
    byte ``b`` of element ``i`` comes from ``b * n + i`` for the chunk's ``n`` elements.
    A thread writes whole elements, as little-endian words of ``dst16``/``dst32``/``dst64``
    (views of ``dst``; ``dst_offs[k]`` is a multiple of 8), so a warp's stores coalesce."""
    k = cuda.blockIdx.x
    w = widths[k]
    n = lens[k] // w
    s0 = src_offs[k]
    d0 = dst_offs[k]
    for i in range(cuda.threadIdx.x, n, cuda.blockDim.x):
        if w == 8:
            v = np.uint64(0)
            for b in range(8):
                v |= np.uint64(src[s0 + b * n + i]) << np.uint64(8 * b)
            dst64[d0 // 8 + i] = v
        elif w == 4:
            dst32[d0 // 4 + i] = (np.uint32(src[s0 + i]) | np.uint32(src[s0 + n + i]) << np.uint32(8)
                                  | np.uint32(src[s0 + 2 * n + i]) << np.uint32(16)
                                  | np.uint32(src[s0 + 3 * n + i]) << np.uint32(24))
        elif w == 2:
            dst16[d0 // 2 + i] = np.uint16(src[s0 + i]) | np.uint16(src[s0 + n + i]) << np.uint16(8)
        else:
            dst[d0 + i] = src[s0 + i]
