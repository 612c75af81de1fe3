"""The user's entry points: sessions, frames, ``connect`` (local or a server), the DB-API and the
thin client's wire format.

The names below load on first use, so that importing one module of the package (the thin
client's ``bamql.api.remote_session``) does not load the session and everything under it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bamql.lazynames import lazy_names

if TYPE_CHECKING:
    from bamql.api.connection import connect
    from bamql.api.frame import col, count
    from bamql.api.session import Session

__all__ = ["Session", "col", "connect", "count"]

#: the public names loaded on first use, by the module that defines them
_LAZY = {"Session": "bamql.api.session", "connect": "bamql.api.connection",
         "col": "bamql.api.frame", "count": "bamql.api.frame"}

__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
