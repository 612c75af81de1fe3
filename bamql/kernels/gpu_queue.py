"""GPU-initiated reads: the device side of BaM's submission/completion queues.

A thread that needs page ``p`` takes a ticket ``t`` (one atomic add on the tail): entry
``t % Q`` is its slot and ``t // Q`` its turn. It waits until the entry's turn counter says
the host has consumed the entry's previous command (``2 * turn``), writes its command
(page, staging buffer, sequence number), fences, and marks the entry filled
(``2 * turn + 1``); no lock is taken on enqueue. Host I/O workers (``storage.queues``)
drain filled entries in ticket order, free each entry for its next turn (``2 * turn + 2``),
read the page into the staging buffer and post the sequence number as its completion;
the thread polls that word and then copies staging into its cache slot.

Status: the protocol runs end to end in numba's CUDA simulator (CI) against the host
workers; the ``file`` backend that will call it from ``warp_read`` is not wired yet.
"""

from __future__ import annotations

from numba import cuda

from bamql.kernels.gpu_cache import _SIM, backoff

if _SIM:

    @cuda.jit(device=True)
    def fence_system():
        cuda.threadfence()

    @cuda.jit(device=True)
    def load_cv(arr, i):
        return arr[i]

else:

    @cuda.jit(device=True, inline=True)
    def fence_system():
        cuda.threadfence_system()  # the host must see the command before the mark

    @cuda.jit(device=True, inline=True)
    def load_cv(arr, i):
        # a volatile load, never an atomic: a read-modify-write of a word the host is
        # writing could put back the old value and lose the host's update
        return cuda.ldcv(arr, i)


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


@cuda.jit(device=True)
def wait_done(staging, seq, cq_done):
    """Wait for the completion of the read tagged ``seq`` into ``staging``."""
    while load_cv(cq_done, staging) != seq:
        backoff()
    fence_system()
