"""Scattered page reads without the GIL: libc ``pread`` called from numba-compiled code.

The GPU file backend's host workers serve thousands of single-page reads in flight. Issued
one by one from Python (``os.preadv``, a memoryview, bookkeeping) each costs tens of
microseconds of interpreter time under the GIL, so 64 threads together managed only
~14 k reads/s cold and ~30 k/s from the OS page cache on the H100 machine
(``bench/results/h100/h100-200M-file-gather.json``). Here a whole batch is one call into
compiled code that releases the GIL and loops over ``pread``: the threads wait on the disk
in parallel, and the interpreter is no longer the limit.
"""

from __future__ import annotations

import ctypes
from typing import NamedTuple

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_libc = ctypes.CDLL(None, use_errno=True)
_pread = _libc.pread
_pread.restype = ctypes.c_ssize_t
_pread.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64)


class DiskLayout(NamedTuple):
    """Where every global page of a store lies on disk: ``fds`` holds the volumes' files,
    then the row groups' (``storage.format`` gives the rules; ``page_location`` applies them
    in compiled code)."""

    fds: np.ndarray  # int32
    n_volumes: int
    total_pages: int
    page_size: int
    g_first: np.ndarray  # int64 per row group: first global page, pages per member, block
    g_pages: np.ndarray
    g_block: np.ndarray

    @classmethod
    def of(cls, manifest, vol_fds, group_fds=()) -> DiskLayout:
        """A store's layout: its volumes and row groups."""
        g = manifest.groups
        return cls(np.asarray([*vol_fds, *group_fds], np.int32), manifest.n_volumes,
                   manifest.total_pages, manifest.page_size,
                   np.array([x.first_page for x in g] or [0], np.int64),
                   np.array([x.n_pages for x in g] or [1], np.int64),
                   np.array([x.block_bytes for x in g] or [0], np.int64))

    @classmethod
    def volumes(cls, vol_fds, n_volumes: int, total_pages: int, page_size: int) -> DiskLayout:
        """Volumes only (a store being written, before its row groups)."""
        none = np.zeros(1, np.int64)
        return cls(np.asarray(vol_fds, np.int32), n_volumes, total_pages, page_size, none,
                   np.ones(1, np.int64), none)


@njit(inline="always")
def page_location(p, n_volumes, total_pages, page_size, g_first, g_pages, g_block):
    """(index into the layout's ``fds``, byte offset) of global page ``p``: volume
    ``p % n_volumes``, or in a row group, member ``j``'s page ``i`` at block ``i``."""
    if p < total_pages:
        return p % n_volumes, (p // n_volumes) * page_size
    g = 0
    while g + 1 < g_first.shape[0] and p >= g_first[g + 1]:
        g += 1
    rel = p - g_first[g]
    return n_volumes + g, (rel % g_pages[g]) * g_block[g] + (rel // g_pages[g]) * page_size


@njit(nogil=True)  # no cache=True: the libc address is baked into the code
def _read(fds, n_volumes, total_pages, page_size, g_first, g_pages, g_block, pages, out, rows):
    for k in range(pages.shape[0]):
        f, off = page_location(pages[k], n_volumes, total_pages, page_size, g_first, g_pages,
                               g_block)
        if _pread(fds[f], out[rows[k]].ctypes, page_size, off) != page_size:
            return k
    return -1


def read_into(layout: DiskLayout, pages: np.ndarray, out: np.ndarray, rows: np.ndarray) -> int:
    """Read page ``pages[k]`` into ``out[rows[k]]`` for every ``k`` (any order, repeats
    allowed); returns the index of the first short or failed read, or -1."""
    ps = layout.page_size
    if out.ndim != 2 or out.shape[1] != ps or out.dtype != np.uint8 or not out.flags.c_contiguous:
        raise ValueError("out must be a C-contiguous uint8 array of shape (n, page_size)")
    return int(_read(*layout, np.ascontiguousarray(pages, np.int64), out,
                     np.ascontiguousarray(rows, np.int64)))


# Words shared with other threads or written by the GPU over PCIe: compiled loops must read
# them afresh on every pass (an acquire load is never hoisted out of a loop or merged) and
# publish with a release store (everything written before it is visible first).
@intrinsic
def load_acquire(typingctx, arr, idx):
    """``arr[idx]`` (an int64 array) as an acquire load."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.int64):
        return None
    sig = types.int64(arr, idx)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        return builder.load_atomic(ptr, "acquire", 8)

    return sig, codegen


@intrinsic
def store_release(typingctx, arr, idx, value):
    """``arr[idx] = value`` (an int64 array) as a release store."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.int64):
        return None
    sig = types.void(arr, idx, value)

    def codegen(context, builder, signature, args):
        aryty, _, valty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        val = context.cast(builder, args[2], valty, types.int64)
        builder.store_atomic(val, ptr, "release", 8)
        return context.get_dummy_value()

    return sig, codegen
