"""The official 265-zone TLC taxi zone lookup, shipped with the package."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import pyarrow as pa
import pyarrow.csv as pacsv

N_ZONES = 265


@lru_cache(maxsize=1)
def zone_lookup() -> pa.Table:
    """Return the zone lookup as an Arrow table (location_id, borough, zone, service_zone)."""
    path = resources.files("bamql.datasets") / "taxi_zone_lookup.csv"
    with resources.as_file(path) as p:
        return pacsv.read_csv(p)


def zone_name(location_id: int) -> str:
    """Return the zone's name for a location id, e.g. 255 -> 'Williamsburg (North Side)'."""
    t = zone_lookup()
    ids = t["location_id"].to_pylist()
    try:
        return t["zone"][ids.index(location_id)].as_py()
    except ValueError:
        raise KeyError(f"no taxi zone {location_id}") from None
