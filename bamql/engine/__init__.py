"""Sessions, executors (CPU, GPU), I/O statistics and results.

The names below load on first use, so that importing one engine module (the CLI's
``bamql.engine.cli_sql``) does not load the session and everything under it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bamql.engine.connection import connect
    from bamql.engine.frame import col, count
    from bamql.engine.session import Session

__all__ = ["Session", "col", "connect", "count"]

#: the public names loaded on first use, by the module that defines them
_LAZY = {"Session": "bamql.engine.session", "connect": "bamql.engine.connection",
         "col": "bamql.engine.frame", "count": "bamql.engine.frame"}


def __getattr__(name: str) -> Any:
    """A public name of ``_LAZY``, imported once, then a plain attribute."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
