"""Does a GPU wait longer for each host read while another GPU reads host memory?

(Run on the H200 x2 in session 16, ``bench/results/h200x2/h200x2-diag-s16.log``: at 1-8 warps
per SM the chains are thousands, and the GPU is held at ~41 M scattered page reads a second,
so those figures are a rate, not a latency; the other GPU's load did not change it. ``--chains
1,32`` measures the latency itself: one warp's worth of chains or fewer.)

In the scale-out runs each partition's kernel took 2.6-17% longer on the device when the
other GPU worked (README, scale-out results), yet two GPUs stream and gather pinned host
memory each as fast as one alone (``host_read_bandwidth.py``): the loss is not in
bandwidth. A kernel's phases that wait on a few reads at a time (a scan's tail, the
gathers of a page cache's misses) pay the latency of each read instead. Here GPU 0 follows
chains of dependent reads through its own pinned, mapped buffer (each read names the next
512 B page, in a random cycle), with 1, 4 and 8 warps per SM, while GPU 1 is idle, streams
its own buffer (``seq``) or gathers scattered pages from it (``rnd``), without pause.

Usage (GPU machine with two GPUs): ``python bench/diag/host_read_latency.py [--gib 14]
[--reps 7] [--wps 1,4,8] [--chains 1,32] [--alloc thp]``. It prints, per load on GPU 1 and
warps per SM (or chains), the median time of one dependent read and the reads per second,
and what GPU 1 read meanwhile.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import time

PAGE_WORDS = 64  # 8-byte words in a 512 B page: the stores' page size in the scale-out runs


def _chase_kernel():
    # module globals: numba's simulator swaps in its own ``cuda`` among a kernel's globals
    # (not its closure); imported here, after CUDA_VISIBLE_DEVICES is set
    global cuda
    from numba import cuda

    @cuda.jit
    def chase(a, starts, steps, o):
        t = cuda.grid(1)
        if t < starts.size:
            p = starts[t]
            for _ in range(steps):
                p = a[p]  # the next read's address comes from this one: no overlap
            o[t] = p

    return chase


def _load(gpu: int, mode: str, gib: float, alloc: str, stop, ready, out) -> None:
    """GPU ``gpu`` reads its own buffer in ``mode`` until ``stop``; reports its GB/s."""
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)  # before numba sees the devices
    from host_read_bandwidth import reader  # this script's folder is on the path

    run, nbytes = reader(mode, gib, alloc)
    run()  # compiles
    ready.wait()
    t, done = time.perf_counter(), 0
    while not stop.is_set():
        run()
        done += nbytes
    out.put(("load", done / (time.perf_counter() - t) / 1e9))


def _chase(gib: float, wps: list[int], reps: int, alloc: str, chains: list[int], stop,
           ready, out) -> None:
    """GPU 0 follows dependent reads; reports, per warps per SM (``wps``) and per number of
    chains (``chains``), (µs a read, M reads/s)."""
    os.environ["CUDA_VISIBLE_DEVICES"] = "0"
    import numpy as np
    from host_read_bandwidth import mapped_buffer
    from numba import cuda

    chase = _chase_kernel()
    n = int(gib * 2**30) // 8
    h, hv = mapped_buffer(n, np.int64, alloc)
    npages = n // PAGE_WORDS
    # one random cycle through every page: page perm[i] names page perm[i + 1]
    perm = np.random.default_rng(1).permutation(npages).astype(np.int64)
    hv[perm * PAGE_WORDS] = np.roll(perm, -1) * PAGE_WORDS
    sms = getattr(cuda.get_current_device(), "MULTIPROCESSOR_COUNT", 1)  # 1: the simulator
    runs = []
    for label, threads in [(f"{w} warps/SM", sms * w * 32) for w in wps] + [
            (f"{c} chain{'s' if c > 1 else ''}", c) for c in chains]:
        blocks = -(-threads // 32)
        # chains start evenly along the cycle and never reach the next one's start: no
        # page is read twice (the GPU's L2 could otherwise serve it)
        steps = max(1, min(4000, npages // threads))
        starts = cuda.to_device(perm[np.arange(threads) * (npages // threads)] * PAGE_WORDS)
        o = cuda.device_array(threads, dtype=np.int64)
        runs.append((label, blocks, threads, steps, starts, o))
        chase[blocks, 32](h, starts, 1, o)  # compiles
    cuda.synchronize()
    ready.wait()
    time.sleep(0.3)  # the other GPU's reads under way
    res = {}
    for label, blocks, threads, steps, starts, o in runs:
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            chase[blocks, 32](h, starts, steps, o)
            cuda.synchronize()
            times.append(time.perf_counter() - t)
        s = statistics.median(times)
        res[label] = (s / steps * 1e6, threads * steps / s / 1e6)
    stop.set()
    out.put(("chase", res))


def measure(load: str | None, gib: float, wps: list[int], reps: int, alloc: str = "driver",
            chains: list[int] = ()) -> tuple[dict, float | None]:
    """GPU 0's dependent reads with GPU 1 idle (``load`` None) or reading in ``load``;
    both buffers allocated as ``alloc`` says (``host_read_bandwidth.mapped_buffer``)."""
    from together import together  # this script's folder is on the path

    ctx = mp.get_context("spawn")
    stop = ctx.Event()  # set by the chase when it is done: the load ends with it
    jobs = [(_chase, (gib, wps, reps, alloc, list(chains), stop))]
    if load is not None:
        jobs.append((_load, (1, load, gib, alloc, stop)))
    got = dict(together(ctx, jobs))
    return got["chase"], got.get("load")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gib", type=float, default=14.0, help="each GPU's buffer")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--wps", default="1,4,8", help="warps per SM, comma-separated ('' for none)")
    ap.add_argument("--chains", default="", help="numbers of chains in all, comma-separated: 1,32")
    ap.add_argument("--loads", default="none,seq,rnd", help="what GPU 1 does meanwhile")
    ap.add_argument("--alloc", default="driver", choices=("driver", "thp"),
                    help="the buffers: the driver's pinned memory, or transparent huge pages")
    a = ap.parse_args(argv)
    wps = [int(w) for w in a.wps.split(",") if w]
    chains = [int(c) for c in a.chains.split(",") if c]
    for load in a.loads.split(","):
        res, bw = measure(None if load == "none" else load, a.gib, wps, a.reps, a.alloc, chains)
        other = "idle" if bw is None else f"{load} at {bw:.1f} GB/s"
        print(f"GPU 1 {other}: " + "; ".join(
            f"{k} {us:.2f} us a read, {mr:.0f} M reads/s" for k, (us, mr) in res.items()),
            flush=True)


if __name__ == "__main__":
    main()
