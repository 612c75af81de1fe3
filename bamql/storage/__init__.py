"""The page store: format, ingest from ORC/Parquet/CSV, and the page reader.

The names below load on first use, so that importing one storage module (the session's
``storage.partitioned``) does not load ingest and everything under it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bamql.storage.format import ColumnMeta, Manifest
    from bamql.storage.ingest import IngestReport, ingest
    from bamql.storage.store import PageStore, decode

__all__ = ["ColumnMeta", "IngestReport", "Manifest", "PageStore", "decode", "ingest"]

#: the public names loaded on first use, by the module that defines them
_LAZY = {"ColumnMeta": "bamql.storage.format", "Manifest": "bamql.storage.format",
         "IngestReport": "bamql.storage.ingest", "ingest": "bamql.storage.ingest",
         "PageStore": "bamql.storage.store", "decode": "bamql.storage.store"}


def __getattr__(name: str) -> Any:
    """A public name of ``_LAZY``, imported once, then a plain attribute."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
