"""The BaM-style page cache, as CUDA device functions (numba.cuda).

State per global page ``p`` (int32 ``state[p]``): bit 30 VALID, bit 29 BUSY, bits 0-28 the
reference count; ``page_slot[p]`` is its slot while VALID. Per slot: ``slot_page[s]`` (the
occupant, -1 if none) and ``slot_lock[s]``. A miss sets BUSY (one CAS decides the loader),
claims a slot with the clock hand, fills it, and publishes VALID with one reference.

A slot is examined only under its lock, and an occupant is evicted only by CAS-ing its
state from exactly "VALID, no references" to 0, so a page can never be loaded into two
slots and a referenced page is never evicted (BaM's PR 39 and the ABA trap of a naive
clock). GPU loads do not block: a reader fences after its read of a slot and before its
reference is dropped, or the load could still be in flight when an evictor refills the
slot; a loader's lanes fence their stores before VALID is published. A thread holds at
most one reference and never waits while holding it, so the
protocol cannot deadlock, however small the cache (BaM's issue 11).

The per-thread functions (``acquire``, ``claim``, ``publish``, ``release``) also run in
numba's CUDA simulator; ``warp_read`` adds warp coalescing (ballot/shfl) and a whole-warp
page fill (from memory here, or through the I/O queues in ``device_queue``), and needs a real GPU.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from bamql.gpu.device import SIMULATOR

VALID = 1 << 30
BUSY = 1 << 29
REFS = BUSY - 1
FULL_MASK = 0xFFFFFFFF

if SIMULATOR:  # the simulator has neither nanosleep nor ldcg

    import time as _time

    from bamql.gpu.device import fix_simulator

    fix_simulator()

    @cuda.jit(device=True)
    def backoff():
        # the simulator's threads are Python threads: a spinning one gives up the GIL, so
        # that the loader it waits for runs
        _time.sleep(0)

    @cuda.jit(device=True)
    def sleep_ns(ns):
        pass

    @cuda.jit(device=True)
    def load_cg(arr, i):
        return arr[i]

else:

    @cuda.jit(device=True, inline=True)
    def backoff():
        cuda.nanosleep(64)

    @cuda.jit(device=True, inline=True)
    def sleep_ns(ns):
        cuda.nanosleep(np.uint32(ns))

    from llvmlite import ir as llir
    from numba import types
    from numba.cuda import cgutils
    from numba.cuda.extending import intrinsic

    #: PTX type, register constraint and register width of each element type
    _CG = {types.int8: ("s8", "h", 16), types.int16: ("s16", "h", 16), types.int32: ("s32", "r", 32),
           types.int64: ("s64", "l", 64), types.uint64: ("u64", "l", 64),
           types.float32: ("f32", "f", 0), types.float64: ("f64", "d", 0)}

    @intrinsic
    def _ld_cg(typingctx, arr, i):
        """``ld.global.cg`` of ``arr[i]`` (1-D) as asm with side effects and a memory clobber.

        numba's ``cuda.ldcg`` is asm without side effects: LLVM may move it past a fence or
        a warp barrier, and the fence that orders a slot's read before its release would
        then order nothing. This load stays where the source puts it.
        """
        if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.dtype in _CG
                and isinstance(i, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            aryty, idxty = sig.args
            ary = context.make_array(aryty)(context, builder, value=args[0])
            idx = context.cast(builder, args[1], idxty, types.intp)
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [idx], wraparound=False)
            ptx, con, bits = _CG[aryty.dtype]
            want = context.get_value_type(aryty.dtype)
            reg = llir.IntType(bits) if bits else want
            fnty = llir.FunctionType(reg, [ptr.type])
            asm = llir.InlineAsm(fnty, f"ld.global.cg.{ptx} $0, [$1];", f"={con},l,~{{memory}}",
                                 side_effect=True)
            v = builder.call(asm, [ptr])
            return builder.trunc(v, want) if bits and reg.width > want.width else v

        return arr.dtype(arr, i), codegen

    @cuda.jit(device=True, inline=True)
    def load_cg(arr, i):
        return _ld_cg(arr, i)  # L2, not a stale L1 line: other SMs fill slots


@cuda.jit(device=True)
def claim(p, state, page_slot, slot_page, slot_lock, clock, n_slots):
    """Find a slot for page ``p`` (whose state we set BUSY) with the clock hand."""
    tries = 0
    while True:
        tries += 1
        if tries % n_slots == 0:  # a whole turn of the clock found nothing: let others go on
            backoff()
        s = cuda.atomic.add(clock, 0, 1) % n_slots
        if cuda.atomic.cas(slot_lock, s, 0, 1) != 0:
            continue
        old = cuda.atomic.add(slot_page, s, 0)  # coherent read
        free = old < 0
        if not free:
            # evict only a valid page nobody references; BUSY or referenced pages stay
            free = cuda.atomic.cas(state, old, VALID, 0) == VALID
        if free:
            cuda.atomic.exch(slot_page, s, p)
            cuda.atomic.exch(page_slot, p, s)
            cuda.threadfence()
            cuda.atomic.exch(slot_lock, s, 0)
            return s
        cuda.atomic.exch(slot_lock, s, 0)


@cuda.jit(device=True)
def acquire(p, state, page_slot, slot_page, slot_lock, clock, n_slots):
    """Take a reference on page ``p``. Returns ``(slot, loader)``; a loader must fill the
    slot and then ``publish``; everyone must ``release`` after reading."""
    while True:
        st = cuda.atomic.add(state, p, 0)
        if st & VALID:
            if cuda.atomic.cas(state, p, st, st + 1) == st:
                return cuda.atomic.add(page_slot, p, 0), False
        elif st & BUSY:
            backoff()
        elif cuda.atomic.cas(state, p, st, BUSY) == st:
            return claim(p, state, page_slot, slot_page, slot_lock, clock, n_slots), True


@cuda.jit(device=True)
def publish(p, state):
    """The loader's fill is visible: page ``p`` becomes VALID with the loader's reference."""
    cuda.threadfence()
    cuda.atomic.exch(state, p, VALID | 1)


@cuda.jit(device=True)
def release(p, state):
    """Drop a reference on page ``p``."""
    cuda.atomic.sub(state, p, 1)


if SIMULATOR:

    @cuda.jit(device=True)
    def fill_from_words(slot, pg, slot_words, io, wpp, lane):
        """Simulator stand-in: lane 0 copies the whole page as one slice (a Python loop over
        the words would make every miss cost thousands of simulated loads)."""
        if lane == 0:
            slot_words[slot * wpp:(slot + 1) * wpp] = io[0][pg * wpp:(pg + 1) * wpp]

else:

    @cuda.jit(device=True, inline=True)
    def fill_from_words(slot, pg, slot_words, io, wpp, lane):
        """The whole warp copies page ``pg`` (``wpp`` 8-byte words) from ``io[0]``, the store's
        pages in GPU memory or in mapped host memory, into its slot."""
        src_words = io[0]
        base = slot * wpp
        sbase = pg * wpp
        for j in range(lane, wpp, 32):
            slot_words[base + j] = src_words[sbase + j]


def _make_unpack(load):
    """``unpack(words, w0, idx, bits)``: the code of slot ``idx`` of a bit-packed page whose
    words start at ``words[w0]`` (``storage.packing``: ``bits`` wide, LSB-first in
    little-endian uint64 words, possibly straddling two), read with ``load(words, i)``."""

    @cuda.jit(device=True, inline=True)
    def unpack(words, w0, idx, bits):
        o = idx * bits
        w = w0 + (o >> 6)
        sh = o & 63
        v = load(words, w) >> np.uint64(sh)
        if sh + bits > 64:
            v |= load(words, w + 1) << np.uint64(64 - sh)
        return np.int64(v & ((np.uint64(1) << np.uint64(bits)) - np.uint64(1)))

    return unpack


@cuda.jit(device=True, inline=True)
def _load(arr, i):
    return arr[i]


#: a packed page's code, by plain loads (a directly read column's pages)
unpack_code = _make_unpack(_load)
#: the same through ``load_cg`` (a cache slot, which other SMs fill)
unpack_code_cg = _make_unpack(load_cg)


@cuda.jit(device=True, inline=True)
def get_value(slot_typed, slot_words, slot, rpp, wpp, idx, bits):
    """Value ``idx`` of a plain page in cache slot ``slot``."""
    return load_cg(slot_typed, slot * rpp + idx)


@cuda.jit(device=True, inline=True)
def get_code(slot_typed, slot_words, slot, rpp, wpp, idx, bits):
    """Code ``idx`` of a bit-packed page in cache slot ``slot`` (the caller adds the page's
    reference and maps the all-ones code to NULL)."""
    return unpack_code_cg(slot_words, slot * wpp, idx, bits)


def _make_warp_read(fill, get):
    """``warp_read`` whose misses are filled by ``fill(slot, page, slot_words, io, wpp, lane)``,
    a device function the whole warp calls (``io`` is a tuple of whatever it reads from), and
    whose reads of a slot are ``get`` (``get_value`` or ``get_code``)."""

    @cuda.jit(device=True, inline=True)
    def warp_read(want, page, idx, slot_typed, state, page_slot, slot_page, slot_lock, clock,
                  n_slots, slot_words, io, wpp, rpp, stat, zero, bits):
        """Value (or, packed, code) ``idx`` of page ``page`` for every lane with ``want``;
        called by the whole warp.

        Lanes that want the same page are served by one acquire (BaM's warp coalescing); a
        miss is filled by all 32 lanes. ``stat[0]`` counts hits, ``stat[1]`` misses (lane 0).
        """
        lane = cuda.laneid
        val = zero
        pend = cuda.ballot_sync(FULL_MASK, want)
        while pend:
            leader = cuda.ffs(pend) - 1
            pg = cuda.shfl_sync(FULL_MASK, page, leader)
            mine = want and page == pg
            same = cuda.ballot_sync(FULL_MASK, mine)
            slot = 0
            loader = 0
            if lane == 0:
                s, ld = acquire(pg, state, page_slot, slot_page, slot_lock, clock, n_slots)
                slot = s
                loader = 1 if ld else 0
                if not ld:  # a hit: the loader's fill happens-before the lanes' reads
                    cuda.threadfence()
            slot = cuda.shfl_sync(FULL_MASK, slot, 0)
            loader = cuda.shfl_sync(FULL_MASK, loader, 0)
            if loader:
                fill(slot, pg, slot_words, io, wpp, lane)
                # every lane's stores reach the GPU's memory before lane 0 publishes VALID
                cuda.threadfence()
                cuda.syncwarp(FULL_MASK)
                if lane == 0:
                    publish(pg, state)
                    stat[1] += 1
                cuda.syncwarp(FULL_MASK)
            elif lane == 0:
                stat[0] += 1
            if mine:
                val = get(slot_typed, slot_words, slot, rpp, wpp, idx, bits)
                # the load is performed before the reference goes: a load in flight is not
                # waited for by the release, and an evictor could refill the slot under it
                cuda.threadfence()
            cuda.syncwarp(FULL_MASK)
            if lane == 0:
                release(pg, state)
            pend &= ~same
        return val

    return warp_read


def _make_lane_read(fill, get):
    """``warp_read`` for numba's CUDA simulator, which has no warp intrinsics: each lane
    acquires its own page and fills a miss alone (the simulator's fills copy the whole page
    when called as lane 0), so the cache protocol and the generated kernels run in CI,
    without warp coalescing."""

    @cuda.jit(device=True)
    def warp_read(want, page, idx, slot_typed, state, page_slot, slot_page, slot_lock, clock,
                  n_slots, slot_words, io, wpp, rpp, stat, zero, bits):
        if not want:
            return zero
        slot, loader = acquire(page, state, page_slot, slot_page, slot_lock, clock, n_slots)
        if loader:
            fill(slot, page, slot_words, io, wpp, 0)
            publish(page, state)
            stat[1] += 1
        else:
            stat[0] += 1
        val = get(slot_typed, slot_words, slot, rpp, wpp, idx, bits)
        release(page, state)
        return val

    return warp_read


def make_warp_read(fill, get):
    """``warp_read`` whose misses are filled by ``fill(slot, page, slot_words, io, wpp, lane)``,
    a device function the whole warp calls (``io`` is a tuple of whatever it reads from), and
    whose reads are ``get``; in the simulator, the lane-by-lane stand-in."""
    return _make_lane_read(fill, get) if SIMULATOR else _make_warp_read(fill, get)


#: misses copied by the warp from the store's pages in GPU or mapped host memory
warp_read = make_warp_read(fill_from_words, get_value)
#: the same for a bit-packed column: the code of the row's slot
warp_read_packed = make_warp_read(fill_from_words, get_code)
