"""Does a GPU read some of the host's memory slower than the rest?

At 4 B rows on the H200 x2 (session 17, ``bench/results/h200x2/h200x2-4000M-scaleout-s17.log``)
the two-GPU kernels ran as fast as one GPU's with one cluster up, but 12-18% slower on the
device with a second cluster holding another 56 GB pinned copy (``--interleave``), and a
worker's kernels took twice as long beside a 28 GiB stream on the other GPU, where a 14 GiB
one had cost 1-4%. Each time more pinned memory was in use (112 or 84 GB against 56 or 28).
If the guest's memory is backed by two host sockets (the VM shows one NUMA node), the memory
pinned last may lie on the socket away from the GPUs. Here one GPU pins ``--regions``
buffers of ``--gib`` GiB one after another (after ``--skip`` GiB pinned and left unread, as
the tmpfs table and a first cluster's copy take memory first) and times a stream (``seq``)
and scattered 512 B page reads (``rnd``) of each region: the figures should not depend on
the region. They did not (session 18, ``--gib 8 --regions 16`` beside the 76 GB tmpfs table:
51.2-51.3 GB/s and 20.7-21.6 GB/s in every region, ``bench/results/h200x2/h200x2-4000M-scaleout-s18.log``).

Usage (GPU machine): ``python bench/diag/host_memory_regions.py [--gpu 0] [--gib 8]
[--regions 16] [--skip 0] [--reps 5] [--alloc driver|thp]``. It prints each region's place
(GiB pinned before it) and its GB/s both ways; under numba's simulator
(``NUMBA_ENABLE_CUDASIM=1``, sizes like ``--gib 0.001``) it runs on the CPU.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--gib", type=float, default=8.0, help="each region's size")
    ap.add_argument("--regions", type=int, default=16)
    ap.add_argument("--skip", type=float, default=0.0, help="GiB pinned first and not read")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--alloc", default="driver", choices=["driver", "thp"])
    a = ap.parse_args(argv)
    os.environ["CUDA_VISIBLE_DEVICES"] = str(a.gpu)  # before numba sees the devices

    import numpy as np
    from host_read_bandwidth import launcher, mapped_buffer  # this script's folder
    from numba import cuda

    keep = []  # every buffer stays pinned to the end, as a cluster's copies do
    if a.skip > 0:
        keep.append(mapped_buffer(int(a.skip * 2**30) // 8, np.uint64, a.alloc))
    print(f"GPU {a.gpu}: {a.regions} regions of {a.gib} GiB after {a.skip} GiB, "
          f"allocation {a.alloc}", flush=True)
    n = int(a.gib * 2**30) // 8
    for r in range(a.regions):
        t = time.perf_counter()
        dev, host = mapped_buffer(n, np.uint64, a.alloc)
        host[:] = 1
        keep.append((dev, host))
        pinned_s = time.perf_counter() - t
        got = {}
        for mode in ("seq", "rnd"):  # rnd: 2 GiB of scattered 512 B pages (BWRNDGIB)
            launch, nbytes = launcher(mode, dev, n)
            launch()  # compiles (first region), warms the translations
            cuda.synchronize()
            times = []
            for _ in range(a.reps):
                t = time.perf_counter()
                launch()
                cuda.synchronize()
                times.append(time.perf_counter() - t)
            got[mode] = nbytes / statistics.median(times) / 1e9
        print(f"region {r:3d} at {a.skip + r * a.gib:8.4g} GiB: seq {got['seq']:6.3g} GB/s, "
              f"rnd {got['rnd']:6.3g} GB/s (pinned and filled in {pinned_s:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
