"""How fast GPUs read pinned, mapped host memory themselves (the ``host`` backend's path),
one GPU alone and two at once, each from its own process and buffer.

``seq``: a grid-stride read of the whole buffer (a scan column); ``rnd``: each warp reads
whole 512 B pages in a scattered order (cache misses of a gathered column). A drop in the
per-GPU figure when two GPUs read at once would mean the machine's host side (memory,
PCIe root, IOMMU) is shared between them. Run on a GPU machine:
``BWMODE=rnd python bench/diag/host_read_bandwidth.py``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time

MODE = os.environ.get("BWMODE", "seq")


def kernels():
    """``(seq, rnd)``: the two reading kernels (compiled on first launch). Imported here,
    after CUDA_VISIBLE_DEVICES is set, as module globals: numba's simulator swaps in its own
    ``cuda`` among a kernel's globals, not its closure."""
    global cuda, uint64
    from numba import cuda, uint64

    @cuda.jit
    def seq(a, o):
        i, step, acc = cuda.grid(1), cuda.gridsize(1), uint64(0)
        while i < a.size:
            acc ^= a[i]
            i += step
        o[cuda.grid(1) % o.size] = acc

    @cuda.jit
    def rnd(a, o, reads, npages):
        t = cuda.grid(1)
        lane, k, nw, acc = t % 32, t // 32, cuda.gridsize(1) // 32, uint64(0)
        while k < reads:
            b = ((k * 1000003) % npages) * 64  # a scattered page, 64 words of 8 B
            acc ^= a[b + lane] ^ a[b + 32 + lane]
            k += nw
        o[cuda.grid(1) % o.size] = acc

    return seq, rnd


def reader(mode: str, gib: float):
    """``(run, nbytes)``: a launch that reads a new pinned, mapped buffer of ``gib`` GiB on
    this process's GPU in ``mode`` (``seq`` or ``rnd``) and waits, and the bytes it reads."""
    import numpy as np
    from numba import cuda

    from bamql.engine.gpu import _host_view

    n = int(gib * 2**30) // 8
    h = cuda.mapped_array(n, dtype=np.uint64)
    _host_view(h)[:] = 1
    sink = cuda.device_array(65536 * 8, dtype=np.uint64)
    seq, rnd = kernels()
    npages = n // 64
    reads = min(npages, (2 << 30) // 512)
    if mode == "seq":
        launch, nbytes = (lambda: seq[1024, 512](h, sink)), n * 8
    else:
        launch, nbytes = (lambda: rnd[1024, 512](h, sink, reads, npages)), reads * 512

    def run() -> None:
        launch()
        cuda.synchronize()

    return run, nbytes


def _worker(gpu: int, gib: float, barrier, out, reps: int) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)  # before numba sees the devices
    run, nbytes = reader(MODE, gib)
    run()  # compiles
    times = []
    for _ in range(reps):
        barrier.wait()  # the GPUs start each repetition together
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    out.put((gpu, nbytes / sorted(times)[reps // 2] / 1e9))


def measure(gpus: list[int], gib: float, reps: int = 7) -> dict[int, float]:
    """GB/s of each GPU in ``gpus``, all reading at once (medians of ``reps``)."""
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(len(gpus)), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(g, gib, barrier, out, reps)) for g in gpus]
    for p in procs:
        p.start()
    res = dict(out.get() for _ in procs)
    for p in procs:
        p.join()
    return res


if __name__ == "__main__":
    print("mode", MODE)
    for gib in (2, 4, 14):
        for gpus in ([0], [1], [0, 1]):
            r = measure(gpus, gib)
            print(f"gpus={gpus} {gib} GiB each: "
                  + ", ".join(f"GPU{g} {bw:.1f} GB/s" for g, bw in sorted(r.items()))
                  + f"  sum {sum(r.values()):.1f}", flush=True)
