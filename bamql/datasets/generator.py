"""Synthetic NYC yellow-taxi trips, calibrated on the real 2019 TLC sample.

Rows are generated in fixed-size chunks; chunk ``i`` draws from a generator seeded by
``(seed, i)``, so a table is the same whatever the number of worker processes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np
import pyarrow as pa

from bamql.datasets.schema import MONEY_PARTS, TAXI_SCHEMA, WILLIAMSBURG

#: Rows per generated chunk: the unit of determinism and of parallel work.
CHUNK_ROWS = 1 << 20
#: 2019-01-01 00:00:00 in microseconds since the epoch.
_START_US = 1_546_300_800_000_000
_YEAR_US = 365 * 24 * 3600 * 1_000_000


@lru_cache(maxsize=1)
def calibration() -> dict:
    """Return the calibration derived from the real TLC sample (see ``calibrate.py``)."""
    return json.loads((resources.files("bamql.datasets") / "calibration.json").read_text())


@dataclass(frozen=True)
class GenParams:
    """What shapes a generated table.

    Parameters
    ----------
    rows
        Total rows of the table.
    seed
        Seed of the whole table; chunk ``i`` uses ``(seed, i)``.
    williamsburg_share
        Share of trips picked up in zones 255 or 256; ``None`` keeps the real share.
    congestion_null_share
        Share of null ``congestion_surcharge``; ``None`` keeps the real share.
    span_us
        Time covered by the pickups, from 2019-01-01 (one year by default).
    """

    rows: int
    seed: int = 0
    williamsburg_share: float | None = None
    congestion_null_share: float | None = None
    span_us: int = _YEAR_US


def _categorical(rng: np.random.Generator, probs: dict[str, float], n: int) -> np.ndarray:
    values = np.array([float(k) for k in probs])
    p = np.array(list(probs.values()), dtype=float)
    return rng.choice(values, size=n, p=p / p.sum())


def _from_quantiles(rng: np.random.Generator, q: list[float], n: int) -> np.ndarray:
    """Inverse-CDF sampling from an empirical quantile table."""
    grid = np.linspace(0.0, 1.0, len(q))
    return np.interp(rng.random(n), grid, np.asarray(q))


def _zone_probs(weights: list[float], share: float | None) -> np.ndarray:
    p = np.asarray(weights, dtype=float)
    if share is not None:
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"williamsburg share must be within [0, 1], got {share}")
        idx = [z - 1 for z in WILLIAMSBURG]
        w = p[idx] / p[idx].sum()
        rest = np.ones_like(p, dtype=bool)
        rest[idx] = False
        p = p.copy()
        p[rest] *= (1.0 - share) / p[rest].sum()
        p[idx] = w * share
    return p / p.sum()


def _cents(x: np.ndarray) -> np.ndarray:
    return np.round(x * 100.0).astype(np.int64)


def generate_chunk(params: GenParams, index: int) -> pa.Table:
    """Generate chunk ``index`` (rows ``index*CHUNK_ROWS`` onwards) of the table."""
    cal = calibration()
    first = index * CHUNK_ROWS
    n = min(CHUNK_ROWS, params.rows - first)
    if n <= 0:
        raise ValueError(f"chunk {index} is past the end of a {params.rows}-row table")
    rng = np.random.default_rng([params.seed, index])

    # Pickups in time order across the whole table: evenly spread, jittered, then sorted.
    step = params.span_us / max(params.rows, 1)
    pickup = _START_US + ((first + np.arange(n) + rng.random(n)) * step).astype(np.int64)
    pickup = (pickup // 1_000_000) * 1_000_000  # TLC timestamps have whole seconds
    pickup.sort()

    dist = np.round(_from_quantiles(rng, cal["trip_distance_quantiles"], n), 2)
    speed = np.maximum(_from_quantiles(rng, cal["speed_mph_quantiles"], n), 1.0)
    dur_s = np.round(dist / speed * 3600.0 + rng.exponential(90.0, n)).astype(np.int64) + 1
    dropoff = pickup + dur_s * 1_000_000

    rate = _categorical(rng, cal["rate_code_id"], n).astype(np.int64)
    payment = _categorical(rng, cal["payment_type"], n).astype(np.int64)
    fare = cal["fare_base"] + cal["fare_per_mile"] * dist
    fare = fare + _from_quantiles(rng, cal["fare_residual_quantiles"][10:-10], n)
    fare_c = np.maximum(_cents(np.round(fare * 2.0) / 2.0), 250)  # metered fares step by 50 cents
    extra_c = _cents(_categorical(rng, cal["extra"], n))
    mta_c = _cents(_categorical(rng, cal["mta_tax"], n))
    tip_ratio = _from_quantiles(rng, cal["tip_ratio_quantiles"][:-5], n)
    tip_c = np.where(payment == 1, _cents(tip_ratio * fare_c / 100.0), 0)
    tolls_c = _cents(_categorical(rng, cal["tolls_amount"], n))
    impr_c = _cents(_categorical(rng, cal["improvement_surcharge"], n))
    cong_c = _cents(_categorical(rng, cal["congestion_surcharge"], n))
    null_share = params.congestion_null_share
    if null_share is None:
        null_share = cal["congestion_null_share"]
    cong_null = rng.random(n) < null_share
    # Sum in integer cents so that total equals the sum of its parts exactly.
    total_c = fare_c + extra_c + mta_c + tip_c + tolls_c + impr_c + np.where(cong_null, 0, cong_c)

    pu_p = _zone_probs(cal["pickup_zone_weights"], params.williamsburg_share)
    do_p = _zone_probs(cal["dropoff_zone_weights"], None)
    flag = np.where(rng.random(n) < cal["store_and_fwd_y_share"], "Y", "N")
    money = dict(
        zip(MONEY_PARTS, (fare_c, extra_c, mta_c, tip_c, tolls_c, impr_c, cong_c), strict=True)
    )
    cols = {
        "vendor_id": _categorical(rng, cal["vendor_id"], n).astype(np.int64),
        "pickup_datetime": pickup,
        "dropoff_datetime": dropoff,
        "passenger_count": _categorical(rng, cal["passenger_count"], n).astype(np.int64),
        "trip_distance": dist,
        "rate_code_id": rate,
        "store_and_fwd_flag": flag,
        "pickup_location_id": rng.choice(np.arange(1, 266), size=n, p=pu_p),
        "dropoff_location_id": rng.choice(np.arange(1, 266), size=n, p=do_p),
        "payment_type": payment,
        **{k: v / 100.0 for k, v in money.items()},
        "total_amount": total_c / 100.0,
    }
    arrays = []
    for field in TAXI_SCHEMA:
        mask = cong_null if field.name == "congestion_surcharge" else None
        arrays.append(pa.array(cols[field.name], type=field.type, mask=mask))
    return pa.Table.from_arrays(arrays, schema=TAXI_SCHEMA)


def n_chunks(rows: int) -> int:
    """Number of chunks of a table of ``rows`` rows."""
    return -(-rows // CHUNK_ROWS)
