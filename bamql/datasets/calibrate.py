"""Derive the synthetic generator's calibration from real TLC sample files.

Run ``python -m bamql.datasets.calibrate SAMPLE.csv ... > calibration.json`` to refresh
``calibration.json``; the generator reads only that JSON, never the samples.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from bamql.datasets.zones import N_ZONES

_QUANTILES = np.linspace(0.0, 1.0, 201)


def _probs(values: np.ndarray) -> dict[str, float]:
    vals, counts = np.unique(values, return_counts=True)
    total = counts.sum()
    return {
        repr(float(v)) if v % 1 else str(int(v)): float(c / total)
        for v, c in zip(vals, counts, strict=True)
    }


def _zone_weights(ids: np.ndarray) -> list[float]:
    counts = np.bincount(ids, minlength=N_ZONES + 1)[1 : N_ZONES + 1].astype(float)
    counts += 0.5  # every zone is possible, even if the sample never saw it
    return (counts / counts.sum()).round(8).tolist()


def calibrate(paths: Sequence[str]) -> dict:
    """Compute the calibration dictionary from one or more TLC sample CSV files."""
    tables = [pacsv.read_csv(p) for p in paths]
    null_shares = [t["congestion_surcharge"].null_count / t.num_rows for t in tables]
    t = pa.concat_tables(tables)
    a = {c: t[c].to_numpy(zero_copy_only=False) for c in t.column_names}
    dur_h = (a["dropoff_datetime"] - a["pickup_datetime"]).astype("timedelta64[s]").astype(float) / 3600
    dist = a["trip_distance"]
    ok = (dur_h > 0.01) & (dist > 0.05) & (dur_h < 5)
    speed = dist[ok] / dur_h[ok]
    normal = (a["fare_amount"] > 0) & (a["rate_code_id"] == 1) & (dist > 0)
    b, c0 = np.polyfit(dist[normal], a["fare_amount"][normal], 1)
    resid = a["fare_amount"][normal] - (c0 + b * dist[normal])
    card = (a["payment_type"] == 1) & (a["fare_amount"] > 0)
    tip_ratio = a["tip_amount"][card] / a["fare_amount"][card]
    cong = a["congestion_surcharge"]
    return {
        "source": [str(p).rsplit("/", 1)[-1] for p in paths],
        "rows": int(t.num_rows),
        "pickup_zone_weights": _zone_weights(a["pickup_location_id"]),
        "dropoff_zone_weights": _zone_weights(a["dropoff_location_id"]),
        "williamsburg_share": float(np.isin(a["pickup_location_id"], [255, 256]).mean()),
        "vendor_id": _probs(a["vendor_id"]),
        "passenger_count": _probs(a["passenger_count"]),
        "rate_code_id": _probs(a["rate_code_id"]),
        "payment_type": _probs(a["payment_type"]),
        "store_and_fwd_y_share": float((a["store_and_fwd_flag"] == "Y").mean()),
        "trip_distance_quantiles": np.quantile(dist, _QUANTILES).round(4).tolist(),
        "speed_mph_quantiles": np.quantile(speed, _QUANTILES).round(4).tolist(),
        "fare_base": round(float(c0), 4),
        "fare_per_mile": round(float(b), 4),
        "fare_residual_quantiles": np.quantile(resid, _QUANTILES).round(4).tolist(),
        "tip_ratio_quantiles": np.quantile(tip_ratio, _QUANTILES).round(4).tolist(),
        "extra": _probs(a["extra"][a["extra"] >= 0]),
        "mta_tax": _probs(a["mta_tax"][(a["mta_tax"] >= 0) & (a["mta_tax"] <= 0.5)]),
        "tolls_amount": _probs(a["tolls_amount"][a["tolls_amount"] < 30]),
        "improvement_surcharge": _probs(a["improvement_surcharge"][a["improvement_surcharge"] >= 0]),
        "congestion_surcharge": _probs(cong[~np.isnan(cong) & (cong >= 0)]),
        "congestion_null_share": float(np.mean(null_shares)),
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Print the calibration of the given sample files as JSON."""
    paths = list(argv if argv is not None else sys.argv[1:])
    json.dump(calibrate(paths), sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
