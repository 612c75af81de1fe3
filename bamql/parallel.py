"""One process-wide lock for numba parallel regions, and how their idle threads wait.

numba's default threading layer must not run two parallel regions at once (from several
Python threads it can hang), so every ``parallel=True`` kernel runs under this lock.

numba's ``omp`` threading layer is GNU OpenMP, whose threads spin for a while at the end of
each parallel region before they sleep. Beside other busy processes (a test run, Dask workers
sharing the machine's cores, a DuckDB query) the spinning threads hold the cores that the
threads still working need, and a query of many short regions (one per morsel) slows
several-fold. ``OMP_WAIT_POLICY=PASSIVE`` has them sleep at once; this module sets it where
the environment names no policy, before any parallel kernel loads the OpenMP runtime (every
module with a parallel kernel imports this one first). A policy the user set is kept.
"""

from __future__ import annotations

import os
import threading

PARALLEL_LOCK = threading.RLock()

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
