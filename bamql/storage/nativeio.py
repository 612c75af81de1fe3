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

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_libc = ctypes.CDLL(None, use_errno=True)
_pread = _libc.pread
_pread.restype = ctypes.c_ssize_t
_pread.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64)


@njit(nogil=True)  # no cache=True: the libc address is baked into the code
def _read_into(fds, n_volumes, page_size, pages, out, rows):
    for k in range(pages.shape[0]):
        p = pages[k]
        got = _pread(fds[p % n_volumes], out[rows[k]].ctypes, page_size, (p // n_volumes) * page_size)
        if got != page_size:
            return k
    return -1


@njit(nogil=True)
def _read_at(fds, offsets, page_size, out, rows):
    for k in range(offsets.shape[0]):
        got = _pread(fds[k], out[rows[k]].ctypes, page_size, offsets[k])
        if got != page_size:
            return k
    return -1


def read_at(fds: np.ndarray, offsets: np.ndarray, page_size: int, out: np.ndarray,
            rows: np.ndarray) -> int:
    """Read ``page_size`` bytes at ``offsets[k]`` of file ``fds[k]`` into ``out[rows[k]]``
    for every ``k``; returns the index of the first short or failed read, or -1."""
    if out.ndim != 2 or out.shape[1] != page_size or out.dtype != np.uint8 or not out.flags.c_contiguous:
        raise ValueError("out must be a C-contiguous uint8 array of shape (n, page_size)")
    return int(_read_at(np.ascontiguousarray(fds, np.int32), np.ascontiguousarray(offsets, np.int64),
                        page_size, out, np.ascontiguousarray(rows, np.int64)))


def read_into(fds: np.ndarray, n_volumes: int, page_size: int, pages: np.ndarray,
              out: np.ndarray, rows: np.ndarray) -> int:
    """Read page ``pages[k]`` into ``out[rows[k]]`` for every ``k`` (any order, repeats
    allowed); returns the index of the first short or failed read, or -1."""
    if out.ndim != 2 or out.shape[1] != page_size or out.dtype != np.uint8 or not out.flags.c_contiguous:
        raise ValueError("out must be a C-contiguous uint8 array of shape (n, page_size)")
    return int(_read_into(fds, n_volumes, page_size, np.ascontiguousarray(pages, np.int64), out,
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
