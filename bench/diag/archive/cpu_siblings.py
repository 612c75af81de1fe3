"""Which CPUs slow each other down: hidden SMT siblings of a virtual machine.

A VM may present its vCPUs as separate cores while pairs of them are hyperthreads of one
physical core: two busy Python threads placed on such a pair each run much slower, and the
guest's scheduler cannot know to avoid it. This times a fixed pure-Python loop on CPU 0
alone, then on CPU 0 while CPU ``k`` runs the same loop, for every other ``k``; a ratio
near 1.0 means independent cores, well above it a shared one.

Usage: ``python bench/diag/archive/cpu_siblings.py [--loops 2000000] [--all]``; ``--all`` tries
every pair of CPUs once (shorter loops) and prints the pairs that slow each other: the map
to pin busy threads by.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path


def _spin(cpu: int, loops: int, start, out) -> None:
    os.sched_setaffinity(0, {cpu})
    start.wait()
    t = time.perf_counter()
    x = 0
    for i in range(loops):
        x ^= i
    out.put((cpu, time.perf_counter() - t))


def timed(cpus: list[int], loops: int) -> dict[int, float]:
    """Seconds of the loop on each of ``cpus``, all started together."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/diag: together.py
    from together import together

    return dict(together(mp.get_context("fork"), [(_spin, (c, loops)) for c in cpus]))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loops", type=int, default=2_000_000)
    ap.add_argument("--all", action="store_true", help="every pair, once each")
    a = ap.parse_args(argv)
    cpus = sorted(os.sched_getaffinity(0))
    if a.all:
        _pairs(cpus, a.loops // 4)
        return
    alone = min(timed([cpus[0]], a.loops)[cpus[0]] for _ in range(3))
    print(f"CPU {cpus[0]} alone: {alone * 1e3:.1f} ms", flush=True)
    for k in cpus[1:]:
        both = min(timed([cpus[0], k], a.loops)[cpus[0]] for _ in range(3))
        print(f"CPU {cpus[0]} beside CPU {k}: {both / alone:.2f}x", flush=True)


def _pairs(cpus: list[int], loops: int) -> None:
    """Every pair once; the pairs whose loops ran 1.4x slower than alone, or more."""
    alone = {c: min(timed([c], loops)[c] for _ in range(2)) for c in cpus}
    shared = []
    for i, x in enumerate(cpus):
        for y in cpus[i + 1 :]:
            t = timed([x, y], loops)
            ratio = max(t[x] / alone[x], t[y] / alone[y])
            if ratio >= 1.4:
                shared.append(f"{x}-{y} {ratio:.2f}x")
    print(f"{len(cpus)} CPUs; pairs that slow each other: {', '.join(shared) or 'none'}", flush=True)


if __name__ == "__main__":
    main()
