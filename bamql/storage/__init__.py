"""The page store: format, ingest from ORC/Parquet/CSV, and the page reader."""

from __future__ import annotations

from bamql.storage.format import ColumnMeta, Manifest
from bamql.storage.ingest import IngestReport, ingest
from bamql.storage.store import PageStore, decode

__all__ = ["ColumnMeta", "IngestReport", "Manifest", "PageStore", "decode", "ingest"]
