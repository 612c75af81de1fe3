"""Taxi data: the TLC schema, the zone lookup, the calibrated generator and the ORC writer."""

from __future__ import annotations

from bamql.datasets.generator import GenParams, generate_chunk
from bamql.datasets.orc import generate_orc
from bamql.datasets.schema import TAXI_SCHEMA, WILLIAMSBURG
from bamql.datasets.zones import zone_lookup

__all__ = ["TAXI_SCHEMA", "WILLIAMSBURG", "GenParams", "generate_chunk", "generate_orc", "zone_lookup"]
