"""bamql: filter-then-aggregate SQL over taxi tables larger than GPU memory.

Predicate columns are scanned; every other column is fetched only for matching rows,
page by page, through a BaM-style page cache (GPU) or positional reads (CPU).

``import bamql`` loads only the error classes: the engine (NumPy, numba, pyarrow, sqlglot)
loads on first use of ``bamql.connect``, ``bamql.Session``, ``bamql.col`` or ``bamql.count``,
so that a one-shot ``bamql`` command pays only for what it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bamql.errors import BamqlError, DeviceError, IngestError, PlanError, StoreError
from bamql.lazynames import lazy_names

if TYPE_CHECKING:
    from bamql.api import Session, col, connect, count

__version__ = "0.1.0"
__all__ = ["BamqlError", "DeviceError", "IngestError", "PlanError", "Session", "StoreError",
           "col", "connect", "count"]

#: the public names loaded on first use, by the module that defines them
_LAZY = {"Session": "bamql.api.session", "connect": "bamql.api.connection",
         "col": "bamql.api.frame", "count": "bamql.api.frame"}

__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__, subpackages=True)
