"""The TLC's 265-zone lookup that every session registers as ``zones``."""

from __future__ import annotations

import functools
from pathlib import Path

import pyarrow as pa

from bamql.sql.dimensions import Dimension, dimension

#: The TLC's 265-zone lookup shipped with the package (a data file: the engine does not
#: import ``bamql.datasets``), registered as ``zones`` under the TLC's column names.
_ZONES_CSV = Path(__file__).resolve().parents[1] / "datasets" / "taxi_zone_lookup.csv"
ZONE_COLUMNS = ("LocationID", "Borough", "Zone", "service_zone")


@functools.lru_cache(maxsize=1)
def zones_dimension() -> Dimension:
    import pyarrow.csv as pacsv

    return dimension("zones", pacsv.read_csv(_ZONES_CSV).rename_columns(list(ZONE_COLUMNS)))


class Deferred:
    """A dimension table made on first use of any of its attributes but its name: the
    zones, whose CSV and ``pyarrow.compute`` a query that names no zone does not need."""

    def __init__(self, name: str, make) -> None:
        self.name, self._make = name, make

    def __getattr__(self, attr: str):
        return getattr(self._make(), attr)


def zones_table() -> pa.Table:
    """The taxi zone lookup every session registers as ``zones`` (columns LocationID,
    Borough, Zone, service_zone)."""
    return zones_dimension().table
