"""What the OS page cache holds of a store, asked of the kernel without reading anything.

A query over a store on disk plans for the disk (``physical.cost``): gathers pay a random
read per page, streams read compressed copies. Pages the OS page cache already holds cost a
memory copy instead, which changes the cheaper path. ``mincore(2)`` on a mapping of a file
says, per OS page, whether the page cache holds it, and neither reads nor starts a read
(a read with ``RWF_NOWAIT`` would start readahead of what it probes). A few samples per
column estimate the share of its pages in memory.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from collections.abc import Iterable

import numpy as np

from bamql.storage.store import PageStore

#: pages probed per column (and per row-group copy, and per column's compressed copy),
#: spread evenly over it
SAMPLES = 8
#: the suffix of a column's name that names its compressed copy's share
COPY = ":zst"


def _libc():
    """libc's mmap, mincore and munmap through ctypes (None where there are none)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_int64)
        libc.mincore.restype = ctypes.c_int
        libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
        libc.munmap.restype = ctypes.c_int
        libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc() if hasattr(mmap, "MAP_SHARED") else None
_FAILED = ctypes.c_void_p(-1).value


def set_enabled(on: bool) -> None:
    """Probe the page cache (on where the system can), or never (off: every plan assumes the
    disk its medium names, as tests and disk benchmarks that want those plans do)."""
    global _LIBC
    _LIBC = _libc() if on and hasattr(mmap, "MAP_SHARED") else None


def _spread(n: int, samples: int) -> list[int]:
    """Up to ``samples`` distinct indexes of ``range(n)``, evenly spread, first and last in."""
    k = min(samples, n)
    return np.unique(np.linspace(0, n - 1, k).astype(np.int64)).tolist() if k else []


def _cached(fd: int, offsets: list[int]) -> list[bool] | None:
    """Whether the page cache holds the OS page of each of ``offsets`` of the file ``fd``
    (None: the system cannot tell, or the file is no longer open)."""
    if _LIBC is None:
        return None
    try:
        size = os.fstat(fd).st_size
    except OSError:  # a closed store: what reads it reports that, not the probe
        return None
    if size == 0:
        return None
    addr = _LIBC.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if addr in (None, _FAILED):
        return None
    try:
        vec, out = ctypes.c_ubyte(), []
        for o in offsets:
            page = min(max(o, 0), size - 1) // mmap.PAGESIZE * mmap.PAGESIZE
            if _LIBC.mincore(addr + page, 1, ctypes.byref(vec)) != 0:
                return None
            out.append(bool(vec.value & 1))
        return out
    finally:
        _LIBC.munmap(addr, size)


def cached_shares(store: PageStore, names: Iterable[str], samples: int = SAMPLES) -> dict[str, float]:
    """The share of each column's pages in the OS page cache (by ``samples`` probes spread
    over it), of each row-group copy holding one of them (by its file name) and of each
    one's compressed copy (by its name and ``COPY``); empty where the system cannot tell
    (the planner then assumes the disk, as without this)."""
    if _LIBC is None:
        return {}
    names = tuple(names)
    lay = store.layout
    nv, ps = lay.n_volumes, lay.page_size
    probes: dict[int, list[tuple[str, int]]] = {}  # file index -> (column or copy, offset)
    for name in names:  # page p of the store lies in volume p % nv, at (p // nv) * ps
        c = store.column(name)
        for p in _spread(c.n_pages, samples):
            g = c.first_page + p
            probes.setdefault(g % nv, []).append((name, g // nv * ps))
    copy: list[tuple[str, int]] = []  # (column's copy, offset) in the compressed copy
    for name in names if store.copy_fd is not None else ():
        _, off, ln = store.stream_chunks(name)
        copy += [(f"{name}{COPY}", int(off[k] + ln[k] // 2)) for k in _spread(len(off), samples)]
    wanted = set(names)
    for g, meta in enumerate(store.manifest.groups):
        if not wanted.isdisjoint(meta.members) and meta.n_pages:
            probes[nv + g] = [(meta.file, k * meta.block_bytes)
                              for k in _spread(meta.n_pages, samples)]
    files = [(int(lay.fds[f]), pairs) for f, pairs in probes.items()]
    if copy:
        files.append((store.copy_fd, copy))
    hits: dict[str, int] = {}
    count: dict[str, int] = {}
    for fd, pairs in files:
        got = _cached(fd, [o for _, o in pairs])
        if got is None:
            return {}
        for (name, _), h in zip(pairs, got, strict=True):
            hits[name] = hits.get(name, 0) + h
            count[name] = count.get(name, 0) + 1
    return {name: hits[name] / count[name] for name in count}
