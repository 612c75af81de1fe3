"""One process-wide lock for numba parallel regions.

numba's default threading layer must not run two parallel regions at once (from several
Python threads it can hang), so every ``parallel=True`` kernel runs under this lock.
"""

from __future__ import annotations

import threading

PARALLEL_LOCK = threading.RLock()
