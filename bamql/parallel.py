"""One process-wide lock for numba parallel regions.

numba's default threading layer must not run two parallel regions at once (from several
Python threads it can hang), so every ``parallel=True`` kernel runs under this lock.

numba's ``omp`` threading layer is GNU OpenMP, whose idle threads spin a while at the end of
each parallel region before they sleep; the environment's ``OMP_WAIT_POLICY`` and
``GOMP_SPINCOUNT`` are left as the user set them. Spinning wins on a machine the query has
to itself and loses beside other busy processes (``bench/diag/omp_wait_policy.py``;
figures in docs/measurements.md).
"""

from __future__ import annotations

import threading

PARALLEL_LOCK = threading.RLock()

_share: int | None = None


def set_share(threads: int | None) -> None:
    """The cores this process may use (a Dask worker's share of its machine's); None: all
    it may run on."""
    global _share
    _share = threads


def cores() -> int:
    """The cores this process may use: its share where one was set, else every core it may
    run on."""
    if _share is not None:
        return _share
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
