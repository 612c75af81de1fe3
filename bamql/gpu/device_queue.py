"""GPU-initiated reads: the device side of BaM's submission/completion queues.

A thread that needs page ``p`` takes a ticket ``t`` (one atomic add on the tail): entry
``t % Q`` is its slot and ``t // Q`` its turn. It waits until the entry's turn counter says
the host has consumed the entry's previous command (``2 * turn``), writes its command
(page, staging buffer, sequence number), fences, and marks the entry filled
(``2 * turn + 1``); no lock is taken on enqueue. Host I/O workers (``host_queue``)
drain filled entries in ticket order, free each entry for its next turn (``2 * turn + 2``),
read the page into the staging buffer and post the sequence number as its completion;
the thread polls that word and then copies staging into its cache slot.

The ``file`` backend's cache misses go through here (``warp_read_file``): lane 0 of the
warp submits the read into its warp's own staging buffer and waits; the whole warp then
copies staging into the cache slot. A row group's page arrives with its whole block, the
same rows' pages of the other members: the warp's next miss on one of them (the next column
of the same row) is copied from staging without a read. Each warp has at most one read in
flight, so the depth the host sees is the number of warps waiting at once. The protocol
also runs in numba's CUDA simulator (CI) against the host workers.
"""

from __future__ import annotations

from numba import cuda

from bamql.gpu.device import SIMULATOR
from bamql.gpu.device_cache import FULL_MASK, backoff, get_code, get_value, make_warp_read, sleep_ns

if SIMULATOR:

    @cuda.jit(device=True)
    def fence_system():
        cuda.threadfence()

    @cuda.jit(device=True)
    def load_cv(arr, i):
        return arr[i]

else:
    from llvmlite import ir as llir
    from numba import types
    from numba.cuda import cgutils
    from numba.cuda.extending import intrinsic

    @intrinsic
    def _ld_volatile(typingctx, arr, i):
        """``ld.volatile.global`` of ``arr[i]`` (1-D, 64-bit integers) as asm with side effects.

        ``cuda.ldcv`` is asm without side effects, so LLVM may hoist it out of a polling loop
        as loop-invariant: the loop then never sees the host's write (a hang we hit). This
        load is issued on every iteration and is a compiler barrier for memory.
        """
        if not (isinstance(arr, types.Array) and arr.ndim == 1
                and arr.dtype in (types.int64, types.uint64) and isinstance(i, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            aryty, idxty = sig.args
            ary = context.make_array(aryty)(context, builder, value=args[0])
            idx = context.cast(builder, args[1], idxty, types.intp)
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [idx], wraparound=False)
            fnty = llir.FunctionType(llir.IntType(64), [ptr.type])
            asm = llir.InlineAsm(fnty, "ld.volatile.global.b64 $0, [$1];", "=l,l,~{memory}",
                                 side_effect=True)
            return builder.call(asm, [ptr])

        return arr.dtype(arr, i), codegen

    @cuda.jit(device=True, inline=True)
    def fence_system():
        cuda.threadfence_system()  # the host must see the command before the mark

    @cuda.jit(device=True, inline=True)
    def load_cv(arr, i):
        # a volatile load, never an atomic: a read-modify-write of a word the host is
        # writing could put back the old value and lose the host's update
        return _ld_volatile(arr, i)


@cuda.jit(device=True)
def submit(page, staging, seq, sq_page, sq_staging, sq_seq, sq_turn, sq_tail, qsize):
    """Enqueue a read of ``page`` into staging buffer ``staging``, tagged ``seq``."""
    t = cuda.atomic.add(sq_tail, 0, 1)
    slot = t % qsize
    turn = t // qsize
    while load_cv(sq_turn, slot) != 2 * turn:  # the entry is still in use
        backoff()
    sq_page[slot] = page
    sq_staging[slot] = staging
    sq_seq[slot] = seq
    fence_system()
    sq_turn[slot] = 2 * turn + 1  # a plain store: the host owns the word until it is set
    fence_system()  # and push the mark out to host memory now


@cuda.jit(device=True)
def wait_done(staging, seq, cq_done):
    """Wait for the completion of the read tagged ``seq`` into ``staging``."""
    ns = 256
    while load_cv(cq_done, staging) != seq:
        # each poll is a PCIe round trip: back off (to ~8 us) rather than flood the link
        sleep_ns(ns)
        ns = min(ns * 2, 8192)
    fence_system()


@cuda.jit(device=True)
def staged_at(pg, g_first, g_pages, vol_pages, wpp):
    """``(key, word offset)`` of page ``pg`` in a staging buffer: a volume page is read alone
    (key: itself); a row group's page comes with its block (key: the block's first page)."""
    if pg < vol_pages:
        return pg, 0
    g = 0
    while g + 1 < g_first.shape[0] and pg >= g_first[g + 1]:
        g += 1
    rel = pg - g_first[g]
    return g_first[g] + rel % g_pages[g], (rel // g_pages[g]) * wpp


if SIMULATOR:

    @cuda.jit(device=True)
    def fill_from_queue(slot, pg, slot_words, io, wpp, lane):
        """Simulator stand-in (the lane-by-lane read calls it as lane 0): every thread has a
        staging page of its own and copies the page from it as one slice."""
        (staging_words, sq_page, sq_staging, sq_seq, sq_turn, sq_tail, cq_done, warp_seq, qsize,
         staged, g_first, g_pages, stage_wpp, vol_pages) = io
        if lane == 0:
            w = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
            key, off = staged_at(pg, g_first, g_pages, vol_pages, wpp)
            if staged[w] != key:
                seq = warp_seq[w] + 1
                warp_seq[w] = seq
                submit(pg, w, seq, sq_page, sq_staging, sq_seq, sq_turn, sq_tail, qsize)
                wait_done(w, seq, cq_done)
                staged[w] = key
            src = w * stage_wpp + off
            slot_words[slot * wpp:(slot + 1) * wpp] = staging_words[src:src + wpp]

else:

    @cuda.jit(device=True, inline=True)
    def fill_from_queue(slot, pg, slot_words, io, wpp, lane):
        """Fill a cache slot with page ``pg`` read by the host I/O workers (whole warp calls).

        ``io = (staging_words, sq_page, sq_staging, sq_seq, sq_turn, sq_tail, cq_done, warp_seq,
        qsize, staged, g_first, g_pages, stage_wpp, vol_pages)``; the warp's global index picks
        its staging buffer. A read of a row group's page brings its whole block: while the
        warp's buffer still holds that block (``staged``), the other members' pages are copied
        from it without a new read.
        """
        (staging_words, sq_page, sq_staging, sq_seq, sq_turn, sq_tail, cq_done, warp_seq, qsize,
         staged, g_first, g_pages, stage_wpp, vol_pages) = io
        w = (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x) // 32
        key, off = staged_at(pg, g_first, g_pages, vol_pages, wpp)
        if lane == 0 and staged[w] != key:  # only this warp's lane 0 touches its words
            seq = warp_seq[w] + 1
            warp_seq[w] = seq
            submit(pg, w, seq, sq_page, sq_staging, sq_seq, sq_turn, sq_tail, qsize)
            wait_done(w, seq, cq_done)
            staged[w] = key
        cuda.syncwarp(FULL_MASK)
        base = slot * wpp
        sbase = w * stage_wpp + off
        for j in range(lane, wpp, 32):
            slot_words[base + j] = load_cv(staging_words, sbase + j)  # host-written: uncached


#: threads that share one staging page: a warp on a GPU, each thread in the simulator
THREADS_PER_STAGING = 1 if SIMULATOR else 32
#: the ``file`` backend's cache read: misses go through the submission queue
warp_read_file = make_warp_read(fill_from_queue, get_value)
#: the same for a bit-packed column: the code of the row's slot
warp_read_file_packed = make_warp_read(fill_from_queue, get_code)
