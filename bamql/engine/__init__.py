"""Sessions, executors (CPU, GPU), I/O statistics and results.

The names below load on first use, so that importing one engine module (the CLI's
``bamql.engine.cli_sql``) does not load the session and everything under it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bamql.lazynames import lazy_names

if TYPE_CHECKING:
    from bamql.engine.connection import connect
    from bamql.engine.frame import col, count
    from bamql.engine.session import Session

__all__ = ["Session", "col", "connect", "count"]

#: the public names loaded on first use, by the module that defines them
_LAZY = {"Session": "bamql.engine.session", "connect": "bamql.engine.connection",
         "col": "bamql.engine.frame", "count": "bamql.engine.frame"}

__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
