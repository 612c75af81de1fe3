"""Scattered page reads without the GIL: libc ``pread`` called from numba-compiled code.

The GPU file backend's host workers serve thousands of single-page reads in flight. Issued
one by one from Python (``os.preadv``, a memoryview, bookkeeping) each holds the GIL for its
interpreter work, so the threads take turns on the interpreter instead of waiting on the
disk together (figures: docs/measurements.md#cost-model-constants). Here a whole batch is
one call into compiled code that releases the GIL and loops over ``pread``: the threads wait
on the disk in parallel, and the interpreter is no longer the limit.

Compiled code calls libc (``pread``, ``usleep``, ``syscall``) by symbol name through small
intrinsics, not through ctypes function objects, whose addresses numba would bake in: so
the readers and the queue workers can be cached on disk like any other numba function.
"""

from __future__ import annotations

import ctypes
from typing import NamedTuple

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir as llir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from bamql.lazyjit import fast_loads, guard_compiles

guard_compiles()  # numba compiles with the cyclic GC paused (bamql.lazyjit)

_libc = ctypes.CDLL(None, use_errno=True)
# libc functions that compiled code calls by name: their addresses are given to numba's
# linker in each process, so the code that calls them can be cached on disk (a ctypes
# function would bake this process's address into it)
for _name in ("pread", "usleep", "syscall"):
    llvm.add_symbol(_name, ctypes.cast(getattr(_libc, _name), ctypes.c_void_p).value)
_I32, _I64, _PTR = llir.IntType(32), llir.IntType(64), llir.IntType(8).as_pointer()


def _libc_call(builder, name: str, ret, params: list, args: list, var_arg: bool = False):
    fn = cgutils.get_or_insert_function(builder.module, llir.FunctionType(ret, params, var_arg),
                                        name)
    return builder.call(fn, args)


def _data(context, builder, aryty, ary, idx=None):
    """A byte pointer to an array's data (or to its element ``idx``)."""
    a = context.make_array(aryty)(context, builder, ary)
    ptr = a.data if idx is None else cgutils.get_item_pointer(context, builder, aryty, a, [idx],
                                                              wraparound=False)
    return builder.bitcast(ptr, _PTR)


@intrinsic
def pread_into(typingctx, fd, arr, count, offset):
    """libc ``pread(fd, <arr's data>, count, offset)``: the bytes read, or -1."""
    if not (isinstance(fd, types.Integer) and isinstance(arr, types.Array)
            and isinstance(count, types.Integer) and isinstance(offset, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        fdt, aryty, ct, ot = sig.args
        return _libc_call(builder, "pread", _I64, [_I32, _PTR, _I64, _I64], [
            context.cast(builder, args[0], fdt, types.int32),
            _data(context, builder, aryty, args[1]),
            context.cast(builder, args[2], ct, types.int64),
            context.cast(builder, args[3], ot, types.int64)])

    return types.int64(fd, arr, count, offset), codegen


@intrinsic
def sleep_us(typingctx, us):
    """libc ``usleep(us)``."""
    if not isinstance(us, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return _libc_call(builder, "usleep", _I32, [_I32],
                          [context.cast(builder, args[0], sig.args[0], types.int32)])

    return types.int32(us), codegen


@intrinsic
def futex_wait(typingctx, nr, words, idx, timeout):
    """``syscall(nr, &words[idx], FUTEX_WAIT_PRIVATE, 0, <timeout's data>, 0, 0)``: sleep
    while the (int64, little-endian) word is 0, at most ``timeout`` (a struct timespec)."""
    if not (isinstance(nr, types.Integer) and isinstance(words, types.Array)
            and isinstance(idx, types.Integer) and isinstance(timeout, types.Array)):
        return None

    def codegen(context, builder, sig, args):
        nrt, wty, it, tty = sig.args
        zero = llir.Constant(_I32, 0)
        return _libc_call(builder, "syscall", _I64, [_I64], [
            context.cast(builder, args[0], nrt, types.int64),
            _data(context, builder, wty, args[1], context.cast(builder, args[2], it, types.intp)),
            llir.Constant(_I32, 128),  # FUTEX_WAIT_PRIVATE
            zero, _data(context, builder, tty, args[3]), llir.Constant(_PTR, None), zero],
            var_arg=True)

    return types.int64(nr, words, idx, timeout), codegen


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


@njit(nogil=True, cache=True)
def _read(fds, n_volumes, total_pages, page_size, g_first, g_pages, g_block, pages, out, rows):
    for k in range(pages.shape[0]):
        f, off = page_location(pages[k], n_volumes, total_pages, page_size, g_first, g_pages,
                               g_block)
        if pread_into(fds[f], out[rows[k]], page_size, off) != page_size:
            return k
    return -1


fast_loads(_read)  # its cached code loads without numba's registries (bamql.lazyjit)


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
