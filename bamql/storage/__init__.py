"""The page store: format, ingest from ORC/Parquet/CSV, and the page reader.

The names below load on first use, so that importing one storage module (the session's
``storage.partitioned``) does not load ingest and everything under it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bamql.lazynames import lazy_names

if TYPE_CHECKING:
    from bamql.storage.format import ColumnMeta, Manifest
    from bamql.storage.ingest import IngestReport, ingest
    from bamql.storage.store import PageStore, decode

__all__ = ["ColumnMeta", "IngestReport", "Manifest", "PageStore", "decode", "ingest"]

#: the public names loaded on first use, by the module that defines them
_LAZY = {"ColumnMeta": "bamql.storage.format", "Manifest": "bamql.storage.format",
         "IngestReport": "bamql.storage.ingest", "ingest": "bamql.storage.ingest",
         "PageStore": "bamql.storage.store", "decode": "bamql.storage.store"}

__getattr__, __dir__ = lazy_names(__name__, _LAZY, __all__)
