"""How fast GPUs read pinned, mapped host memory themselves (the ``host`` backend's path),
one GPU alone and two at once, each from its own process and buffer.

``seq``: a grid-stride read of the whole buffer (a scan column); ``rnd``: each warp reads
whole 512 B pages in a scattered order (cache misses of a gathered column). A drop in the
per-GPU figure when two GPUs read at once would mean the machine's host side (memory,
PCIe root, IOMMU) is shared between them. Run on a GPU machine:
``BWMODE=rnd python bench/diag/host_read_bandwidth.py`` (``BWMODE=seq,rnd``: the first GPU
of a set streams while the second gathers). ``BWALLOC=thp`` takes the buffers
from anonymous memory on transparent huge pages, pinned and mapped by registration, instead
of the driver's pinned allocation (``cuda.mapped_array``); ``BWGIB=2,4,14`` the sizes and
``BWGPUS=0;1;0,1`` the GPU sets measured, ``BWRNDGIB=2`` what ``rnd`` reads.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time

MODE = os.environ.get("BWMODE", "seq")
ALLOC = os.environ.get("BWALLOC", "driver")


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


def mapped_buffer(n: int, dtype, alloc: str = "driver"):
    """``(device view, host view)`` of a new pinned, mapped host buffer of ``n`` items.

    ``driver``: ``cuda.mapped_array`` (cuMemHostAlloc); ``thp``: anonymous memory advised
    onto transparent huge pages, touched, then pinned and mapped by registration, so that
    the host's translations of it (IOMMU, the GPU's own) may use 2 MiB pages."""
    import numpy as np
    from numba import cuda

    from bamql.gpu.device import host_view

    if alloc == "driver":
        h = cuda.mapped_array(n, dtype=dtype)
        return h, host_view(h)
    if alloc != "thp":
        raise SystemExit(f"unknown allocation {alloc!r}: driver or thp")
    import mmap

    from numba import config
    from numba.cuda.cudadrv import devicearray, driver

    nbytes = n * np.dtype(dtype).itemsize
    m = mmap.mmap(-1, nbytes + (2 << 20), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    m.madvise(mmap.MADV_HUGEPAGE)
    raw = np.frombuffer(m, dtype=np.uint8)
    skip = -raw.ctypes.data % (2 << 20)  # start on a 2 MiB boundary
    host = raw[skip:skip + nbytes].view(dtype)
    host[:] = 0  # fault every page in now, as huge pages where the kernel can
    if config.ENABLE_CUDASIM:  # the simulator's kernels read host arrays as they are
        return host, host
    pm = cuda.current_context().mempin(host, driver.host_pointer(host),
                                       driver.host_memory_size(host), mapped=True)
    dev = devicearray.from_array_like(host, gpu_data=pm)
    dev._bamql_keep = m  # the mapping lives as long as the device view
    return dev, host


def launcher(mode: str, h, n: int):
    """``(launch, nbytes)``: a launch of ``mode`` (``seq`` or ``rnd``) over the mapped buffer
    ``h`` of ``n`` 8-byte words (not waited for), and the bytes it reads."""
    import numpy as np
    from numba import config, cuda

    sink = cuda.device_array(65536 * 8, dtype=np.uint64)
    seq, rnd = kernels()
    npages = n // 64
    # rnd reads this much (BWRNDGIB, default 2 GiB) of its pages: mixed with seq, sized so
    # both GPUs read for about as long
    reads = min(npages, int(float(os.environ.get("BWRNDGIB", "2")) * 2**30) // 512)
    blocks, threads = (2, 32) if config.ENABLE_CUDASIM else (1024, 512)  # the simulator: few
    if mode == "seq":
        return (lambda: seq[blocks, threads](h, sink)), n * 8
    return (lambda: rnd[blocks, threads](h, sink, reads, npages)), reads * 512


def reader(mode: str, gib: float, alloc: str = "driver"):
    """``(run, nbytes)``: a launch that reads a new pinned, mapped buffer of ``gib`` GiB on
    this process's GPU in ``mode`` (``seq`` or ``rnd``) and waits, and the bytes it reads."""
    import numpy as np
    from numba import cuda

    n = int(gib * 2**30) // 8
    h, hv = mapped_buffer(n, np.uint64, alloc)
    hv[:] = 1
    launch, nbytes = launcher(mode, h, n)

    def run() -> None:
        launch()
        cuda.synchronize()

    return run, nbytes


def _worker(gpu: int, mode: str, gib: float, reps: int, barrier, out) -> None:
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)  # before numba sees the devices
    run, nbytes = reader(mode, gib, ALLOC)
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
    from together import together  # this script's folder is on the path

    modes = MODE.split(",")  # one mode for all, or one per GPU of the set (seq,rnd: mixed)
    return dict(together(mp.get_context("spawn"), [
        (_worker, (g, modes[i % len(modes)], gib, reps)) for i, g in enumerate(gpus)]))


if __name__ == "__main__":
    print("mode", MODE, "allocation", ALLOC)
    for gib in (float(g) for g in os.environ.get("BWGIB", "2,4,14").split(",")):
        for gpus in ([int(g) for g in s.split(",")]
                     for s in os.environ.get("BWGPUS", "0;1;0,1").split(";")):
            r = measure(gpus, gib)
            print(f"gpus={gpus} {gib} GiB each: "
                  + ", ".join(f"GPU{g} {bw:.1f} GB/s" for g, bw in sorted(r.items()))
                  + f"  sum {sum(r.values()):.1f}", flush=True)
