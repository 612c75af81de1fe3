"""Run measuring processes together and collect one answer from each (the diags' shared
harness): each target waits on a barrier with the others, then puts its answer on a queue.
A process that dies ends the measurement with one line instead of leaving the others, and
this process, waiting."""

from __future__ import annotations

import queue
from collections.abc import Callable


def together(ctx, jobs: list[tuple[Callable, tuple]]) -> list:
    """Run ``target(*args, barrier, out)`` for each ``(target, args)`` of ``jobs``, each in
    a process of ``ctx`` (a multiprocessing context), with one barrier for all of them;
    returns what each put on ``out``, in the order they came."""
    barrier, out = ctx.Barrier(len(jobs)), ctx.Queue()
    procs = [ctx.Process(target=t, args=(*a, barrier, out)) for t, a in jobs]
    for p in procs:
        p.start()
    got: list = []
    try:
        while len(got) < len(procs):
            try:
                got.append(out.get(timeout=1))
            except queue.Empty:  # a process that died leaves the others waiting: end them
                if any(p.exitcode not in (None, 0) for p in procs):
                    raise SystemExit("a measuring process failed (its error is above)") from None
    finally:
        for p in procs:
            if len(got) < len(procs):
                p.terminate()
            p.join()
    return got
