"""Errors that bamql reports to users as one line, never as a traceback."""

from __future__ import annotations


class BamqlError(Exception):
    """Base class of every error bamql raises on purpose; its message is user-facing."""


class IngestError(BamqlError):
    """A source could not be ingested (missing, unreadable, schemas disagree...)."""


class StoreError(BamqlError):
    """A page store is missing, corrupt, truncated or of an unknown format."""


class PlanError(BamqlError):
    """A query uses SQL that bamql cannot run, or names an unknown table or column."""


class DeviceError(BamqlError):
    """The requested device or backend is unavailable or out of memory."""


class ConfigError(BamqlError):
    """A setting, a ``BAMQL_*`` environment variable or a keyword, has a value bamql does not
    take (settings of the device and of the planner raise DeviceError and PlanError)."""


class KernelCacheWarning(UserWarning):
    """The on-disk kernel cache is not used (unsafe or unwritable directory): kernels are
    compiled in memory in every process."""


class UsageError(BamqlError):
    """The Python API was called wrongly: an argument of the wrong type (``connect(None)``,
    ``sql(b"...")``), or a session used after ``close()``."""


class OutOfRangeError(BamqlError):
    """A value does not fit its SQL type: an integer overflow while running a query (as
    DuckDB's "Out of Range Error"), or a constant beyond what its type holds."""


class ServerError(BamqlError):
    """A bamql server cannot be reached, refused the client's token, or failed on its side
    (``bamql serve``; a query's own error arrives as its own class)."""


class StoreWarning(UserWarning):
    """A note about a store that opens nonetheless: one not sealed on this machine, verified
    in full at open (``storage.seal``)."""


#: The end of the fused translator's refusal of a construct that only the plan tree runs
#: (the tree's own error says more where it refuses the statement too)
TREE_ONLY = "is not supported by the fused kernels"
