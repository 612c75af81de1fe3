"""The 2019 NYC TLC yellow-taxi schema, as in the public trip records."""

from __future__ import annotations

import pyarrow as pa

#: Column name -> Arrow type of the 2019 yellow-taxi trip records (snake_case names).
TAXI_SCHEMA: pa.Schema = pa.schema(
    [
        ("vendor_id", pa.int64()),
        ("pickup_datetime", pa.timestamp("us")),
        ("dropoff_datetime", pa.timestamp("us")),
        ("passenger_count", pa.int64()),
        ("trip_distance", pa.float64()),
        ("rate_code_id", pa.int64()),
        ("store_and_fwd_flag", pa.string()),
        ("pickup_location_id", pa.int64()),
        ("dropoff_location_id", pa.int64()),
        ("payment_type", pa.int64()),
        ("fare_amount", pa.float64()),
        ("extra", pa.float64()),
        ("mta_tax", pa.float64()),
        ("tip_amount", pa.float64()),
        ("tolls_amount", pa.float64()),
        ("improvement_surcharge", pa.float64()),
        ("total_amount", pa.float64()),
        ("congestion_surcharge", pa.float64()),
    ]
)

#: The parts whose sum is ``total_amount`` (a null part counts as zero).
MONEY_PARTS: tuple[str, ...] = (
    "fare_amount",
    "extra",
    "mta_tax",
    "tip_amount",
    "tolls_amount",
    "improvement_surcharge",
    "congestion_surcharge",
)

#: The two Williamsburg zones of the BaM taxi queries.
WILLIAMSBURG: tuple[int, int] = (255, 256)
