"""bamql: filter-then-aggregate SQL over taxi tables larger than GPU memory.

Predicate columns are scanned; every other column is fetched only for matching rows,
page by page, through a BaM-style page cache (GPU) or positional reads (CPU).
"""

from __future__ import annotations

from bamql.engine import Session, col, connect, count
from bamql.errors import BamqlError, DeviceError, IngestError, PlanError, StoreError

__version__ = "0.1.0"
__all__ = ["BamqlError", "DeviceError", "IngestError", "PlanError", "Session", "StoreError",
           "col", "connect", "count"]
