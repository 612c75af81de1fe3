"""bamql: filter-then-aggregate SQL over taxi tables larger than GPU memory.

Predicate columns are scanned; every other column is fetched only for matching rows,
page by page, through a BaM-style page cache (GPU) or positional reads (CPU).

``import bamql`` loads only the error classes: the engine (NumPy, numba, pyarrow, sqlglot)
loads on first use of ``bamql.connect``, ``bamql.Session``, ``bamql.col`` or ``bamql.count``,
so that a one-shot ``bamql`` command pays only for what it runs.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from bamql.errors import BamqlError, DeviceError, IngestError, PlanError, StoreError

if TYPE_CHECKING:
    from bamql.engine import Session, col, connect, count

__version__ = "0.1.0"
__all__ = ["BamqlError", "DeviceError", "IngestError", "PlanError", "Session", "StoreError",
           "col", "connect", "count"]

#: the public names loaded on first use, by the module that defines them
_LAZY = {"Session": "bamql.engine.session", "connect": "bamql.engine.connection",
         "col": "bamql.engine.frame", "count": "bamql.engine.frame"}


def __getattr__(name: str) -> Any:
    """A public name of ``_LAZY`` (imported once, then a plain attribute), or a subpackage
    (``bamql.engine``) as after ``import bamql.engine``."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
