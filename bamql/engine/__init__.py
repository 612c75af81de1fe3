"""Sessions, executors (CPU, GPU), I/O statistics and results."""

from __future__ import annotations

from bamql.engine.frame import col, count
from bamql.engine.session import Session, connect

__all__ = ["Session", "col", "connect", "count"]
