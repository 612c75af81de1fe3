from __future__ import annotations

import numpy as np
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pytest

from bamql.datasets.generator import GenParams, calibration, generate_chunk
from bamql.datasets.schema import MONEY_PARTS, TAXI_SCHEMA
from bamql.datasets.zones import N_ZONES, zone_lookup, zone_name
from tests.conftest import SAMPLES


def test_schema_matches_the_real_sample_columns():
    real = pacsv.read_csv(SAMPLES[0])
    assert real.column_names == TAXI_SCHEMA.names


def test_zone_lookup_is_the_official_265_zones():
    t = zone_lookup()
    assert t.num_rows == N_ZONES
    assert zone_name(255) == "Williamsburg (North Side)"
    assert zone_name(256) == "Williamsburg (South Side)"
    with pytest.raises(KeyError):
        zone_name(999)


def test_deterministic_by_seed(taxi_table):
    again = generate_chunk(GenParams(rows=60_000, seed=7, williamsburg_share=0.005), 0)
    assert again.equals(taxi_table)
    other = generate_chunk(GenParams(rows=60_000, seed=8, williamsburg_share=0.005), 0)
    assert not other.equals(taxi_table)


def test_schema_and_money_arithmetic(taxi_table):
    assert taxi_table.schema == TAXI_SCHEMA
    parts = sum(pc.fill_null(taxi_table[c], 0.0).to_numpy() for c in MONEY_PARTS)
    np.testing.assert_allclose(parts, taxi_table["total_amount"].to_numpy(), atol=1e-9)


def test_timestamps_in_time_order(taxi_table):
    pu = taxi_table["pickup_datetime"].to_numpy().astype(np.int64)
    do = taxi_table["dropoff_datetime"].to_numpy().astype(np.int64)
    assert (np.diff(pu) >= 0).all()
    assert (do > pu).all()


def test_nulls_where_the_real_data_has_them(taxi_table):
    share = taxi_table["congestion_surcharge"].null_count / taxi_table.num_rows
    assert abs(share - calibration()["congestion_null_share"]) < 0.02
    others = [c for c in TAXI_SCHEMA.names if c != "congestion_surcharge"]
    assert all(taxi_table[c].null_count == 0 for c in others)


@pytest.mark.parametrize("share", [0.0005, 0.01, 0.0])
def test_williamsburg_share_is_settable(share):
    t = generate_chunk(GenParams(rows=200_000, seed=1, williamsburg_share=share), 0)
    got = pc.mean(pc.is_in(t["pickup_location_id"], value_set=_wb()).cast("float64")).as_py()
    assert abs(got - share) <= 4 * np.sqrt(share * (1 - share) / t.num_rows) + 1e-12


def _wb():
    import pyarrow as pa

    return pa.array([255, 256])


def test_calibrated_on_the_real_sample():
    real = pacsv.read_csv(SAMPLES[0])
    syn = generate_chunk(GenParams(rows=100_000, seed=3), 0)
    for c in ("trip_distance", "fare_amount", "tip_amount", "total_amount"):
        r = np.median(real[c].to_numpy())
        s = np.median(syn[c].to_numpy())
        assert abs(s - r) / r < 0.2, (c, r, s)
    # the busiest pickup zones of the real sample stay the busiest
    cal = np.asarray(calibration()["pickup_zone_weights"])
    counts = np.bincount(syn["pickup_location_id"].to_numpy(), minlength=N_ZONES + 1)[1:]
    top = np.argsort(cal)[-5:]
    np.testing.assert_allclose(counts[top] / syn.num_rows, cal[top], rtol=0.1)
    share = pc.mean(pc.is_in(real["pickup_location_id"], value_set=_wb()).cast("float64")).as_py()
    assert abs(calibration()["williamsburg_share"] - share) < 0.001
