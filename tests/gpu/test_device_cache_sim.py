"""The page-cache protocol in numba's CUDA simulator (runs in CI, no GPU needed)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("numba.cuda")

SCRIPT = textwrap.dedent("""
    import numpy as np
    from numba import cuda
    from bamql.gpu.device_cache import acquire, publish, release, load_cg

    @cuda.jit
    def kern(pages, src, wpp, slots, state, page_slot, slot_page, slot_lock, clock, n_slots, out,
             fills):
        i = cuda.grid(1)
        if i < pages.size:
            p = pages[i]
            slot, loader = acquire(p, state, page_slot, slot_page, slot_lock, clock, n_slots)
            if loader:
                for j in range(wpp):
                    slots[slot * wpp + j] = src[p * wpp + j]
                cuda.atomic.add(fills, p, 1)
                publish(p, state)
            out[i] = load_cg(slots, slot * wpp + i % wpp)
            release(p, state)

    rng = np.random.default_rng(0)
    n_pages, wpp, n = 40, 4, 96
    src = rng.integers(0, 1 << 40, n_pages * wpp).astype(np.int64)
    pages = rng.integers(0, n_pages, n).astype(np.int64)
    for n_slots in (64, 3, 1):
        state = np.zeros(n_pages, np.int32)
        page_slot = np.full(n_pages, -1, np.int32)
        slot_page = np.full(n_slots, -1, np.int32)
        slot_lock = np.zeros(n_slots, np.int32)
        clock = np.zeros(1, np.int64)
        slots = np.zeros(n_slots * wpp, np.int64)
        out = np.zeros(n, np.int64)
        fills = np.zeros(n_pages, np.int64)
        kern[3, 32](pages, src, wpp, slots, state, page_slot, slot_page, slot_lock, clock, n_slots,
                    out, fills)
        want = src[pages * wpp + np.arange(n) % wpp]
        assert (out == want).all(), n_slots
        assert (state & ((1 << 29) - 1) == 0).all()  # every reference released
        if n_slots >= n_pages:  # cache larger than the working set: each page loaded once
            assert (fills[np.unique(pages)] == 1).all() and fills.sum() == len(np.unique(pages))
        print("slots", n_slots, "fills", int(fills.sum()), "ok")
""")


def test_cache_protocol_in_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("ok") == 3


ATOMICS = textwrap.dedent("""
    import numpy as np
    from numba import cuda
    from numba.cuda.simulator import kernelapi
    import bamql.gpu.device_cache  # noqa: F401  (shares the simulator's atomic locks)

    names = ("addlock", "sublock", "caslock", "exchlock", "maxlock", "minlock")
    assert len({id(getattr(kernelapi, n)) for n in names}) == 1

    @cuda.jit
    def kern(word, rounds):
        # a reference taken by cas and dropped by sub, as the page cache does on a state word
        for _ in range(rounds):
            while True:
                st = cuda.atomic.add(word, 0, 0)
                if cuda.atomic.cas(word, 0, st, st + 1) == st:
                    break
            cuda.atomic.sub(word, 0, 1)
            cuda.atomic.add(word, 1, 1)

    word = np.zeros(2, np.int64)
    kern[2, 32](word, 200)
    assert word[0] == 0 and word[1] == 2 * 32 * 200, word
    print("atomics ok")
""")


def test_simulated_atomics_of_different_kinds_do_not_lose_updates():
    """numba's simulator locks each atomic kind apart; bamql makes them one lock, as on a
    GPU (a lost update leaves a page BUSY for ever: the simulated kernel hangs)."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", ATOMICS], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "atomics ok" in r.stdout


def test_a_blocks_threads_share_one_simulated_shared_array(monkeypatch):
    # numba's simulator looks a block's shared array up by the calling line and makes it
    # when missing, with no lock: threads that reach the line together could each make
    # their own, and one thread's additions were lost from the block's merge (CI saw a
    # grouped AVG and a COUNT off under load). Here the allocation yields the GIL between
    # the lookup and the store, as a busy machine may: every thread still gets one array.
    import threading
    import time

    import numpy as np
    from numba.cuda.simulator import kernelapi

    from bamql.gpu import device

    device.fix_simulator()

    class SlowNumpy:
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def empty(*args, **kwargs):
            time.sleep(0.002)  # another thread runs meanwhile
            return np.empty(*args, **kwargs)

    monkeypatch.setattr(device, "np", SlowNumpy())
    block = kernelapi.FakeCUDAShared(0)
    start = threading.Barrier(16)
    got: list = []

    def thread() -> None:
        start.wait()
        got.append(block.array(4, np.int64))  # one line: one shared array

    threads = [threading.Thread(target=thread) for _ in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(got) == 16 and len({id(a) for a in got}) == 1
    # arrays made on other lines stay apart, as the simulator keys them
    assert block.array(4, np.int64) is not got[0]
