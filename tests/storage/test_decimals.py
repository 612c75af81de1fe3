"""Decimal floats stored as scaled integers: exact round trips, honest fallbacks."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.errors import IngestError
from bamql.storage.decimals import DecimalScan, encode, scan_all
from bamql.storage.ingest import ingest
from bamql.storage.sources import open_source
from bamql.storage.store import PageStore
from tests.conftest import SAMPLES, read_orc


def _roundtrip(values: np.ndarray) -> tuple[int, np.dtype] | None:
    enc = scan_all([values]).encoding()
    if enc is not None:
        stored = encode(values, *enc)
        back = stored.astype(np.float64) / 10.0**enc[0]
        back[stored == np.iinfo(enc[1]).min] = np.nan
        # bit for bit, not approximately: a decode must give the very double ingested
        same = (back == values) | (np.isnan(back) & np.isnan(values))
        assert same.all()
    return enc


def test_cents_become_int16_and_round_trip_exactly():
    rng = np.random.default_rng(3)
    cents = rng.integers(-30000, 30000, 100_000)
    v = cents / 100.0
    v[::97] = np.nan
    assert _roundtrip(v) == (2, np.dtype(np.int16))


def test_the_fewest_decimals_and_the_narrowest_width_are_chosen():
    assert _roundtrip(np.array([1.0, 2.5, -0.5])) == (1, np.dtype(np.int16))
    # whole numbers take one decimal: scale 0 means "stored as is" (format.ColumnMeta)
    assert _roundtrip(np.array([0.0, 7.0, 12.0])) == (1, np.dtype(np.int16))
    assert _roundtrip(np.array([0.0, 7.0, 4000.0])) == (1, np.dtype(np.int32))
    assert _roundtrip(np.array([0.125, 3.5])) == (3, np.dtype(np.int16))
    assert _roundtrip(np.array([3004.8, -52.8])) == (1, np.dtype(np.int16))
    assert _roundtrip(np.array([3004.81, -52.8])) == (2, np.dtype(np.int32))  # 300481 > int16


@pytest.mark.parametrize("values", [
    np.array([1 / 3, 0.5]),  # not a decimal of <= 4 digits
    np.array([1.5, np.inf]),  # not finite
    np.array([0.01, 1e9]),  # does not fit int32 once scaled
    np.array([1.23456]),  # five decimals
    np.array([1.5, -0.0]),  # a negative zero: 1 / -0.0 is -inf, 1 / 0.0 is +inf
])
def test_what_does_not_fit_stays_float(values):
    assert _roundtrip(values) is None


def test_all_null_and_empty_columns_are_encodable():
    assert DecimalScan().encoding() == (1, np.dtype(np.int16))
    assert _roundtrip(np.full(10, np.nan)) == (1, np.dtype(np.int16))


def test_merging_scans_keeps_the_most_decimals_and_any_failure():
    a, b = scan_all([np.array([1.5])]), scan_all([np.array([0.25, 9.0])])
    assert a.merge(b).encoding() == (2, np.dtype(np.int16))
    assert a.merge(scan_all([np.array([np.pi])])).encoding() is None


def test_encode_refuses_values_the_scan_did_not_see():
    with pytest.raises(ValueError, match="not a 2-decimal number"):
        encode(np.array([1.25, 1.255]), 2, np.int16)
    with pytest.raises(ValueError, match="within int16"):
        encode(np.array([400.0]), 2, np.int16)
    with pytest.raises(ValueError, match="not a 2-decimal number"):
        encode(np.array([1.25, -0.0]), 2, np.int16)


def test_a_negative_zero_keeps_its_sign_through_a_query(tmp_path):
    """Found by the random-query test: AVG(i / x) over x = -0.0 gave -inf for +inf."""
    pq.write_table(pa.table({"i": pa.array([-6, 4]), "x": pa.array([-0.0, 2.5])}), tmp_path / "r.parquet")
    ingest([tmp_path / "r.parquet"], tmp_path / "data" / "r", page_size=512)
    with bamql.connect(tmp_path / "data") as con:
        assert con.sql("SELECT MIN(i / x), MAX(i / x) FROM r").rows() == [(1.6, np.inf)]


def test_generated_money_columns_are_narrow_and_read_back_exactly(taxi_store, taxi_orc):
    src = read_orc(taxi_orc)
    with PageStore(taxi_store / "trips") as s:
        for name in ("trip_distance", "fare_amount", "total_amount", "tip_amount", "extra"):
            c = s.column(name)
            # fares and extras step by 50 cents: one decimal is enough there
            assert (c.kind, c.dtype) == ("float", "int16") and c.scale in (1, 2), name
            got = s.to_arrow(name)
            assert got.type == pa.float64()
            assert got.equals(src[name].combine_chunks()), name
        # zone maps and manifest ranges are in the column's units
        c = s.column("trip_distance")
        assert c.max == pc.max(src["trip_distance"]).as_py()


def test_real_tlc_sample_reads_back_exactly(sample_store):
    src = pa.concat_tables(pa.Table.from_batches(list(open_source(p).batches())) for p in SAMPLES)
    with PageStore(sample_store / "trips") as s:
        scaled = [c.name for c in s.manifest.columns if c.scale]
        assert "fare_amount" in scaled  # refunds (negative) and 3,004.00 fares included
        for name in scaled:
            assert s.to_arrow(name).equals(src[name].cast(pa.float64()).combine_chunks()), name


def test_plain_keeps_float64(tmp_path, taxi_orc):
    ingest(taxi_orc, tmp_path / "t", floats="plain")
    with PageStore(tmp_path / "t") as s:
        assert s.column("trip_distance").dtype == "float64"
        assert s.column("trip_distance").scale == 0
    with pytest.raises(IngestError, match=r"^--floats must be one of auto, plain, decimals, "
                       r"not 'decimal'$"):
        ingest(taxi_orc, tmp_path / "u", floats="decimal")
    assert not (tmp_path / "u").exists()


def test_explain_shows_each_columns_storage(taxi_store):
    import bamql

    with bamql.connect(taxi_store, device="cpu") as con:
        text = "\n".join(con.sql("EXPLAIN SELECT AVG(trip_distance) FROM trips "
                                 "WHERE pickup_location_id = 255").to_arrow()["explain"].to_pylist())
    assert "int16/1e2" in text  # trip_distance: cents in an int16


def test_older_and_unknown_versions_are_refused(tmp_path, taxi_orc):
    import json

    from bamql.errors import StoreError

    ingest(taxi_orc, tmp_path / "t", floats="plain", columns=["trip_distance", "fare_amount"])
    man = tmp_path / "t" / "manifest.json"
    d = json.loads(man.read_text())
    for v in (1, 2, 3):  # unsealed
        man.write_text(json.dumps({**d, "format_version": v}))
        with pytest.raises(StoreError, match=f"format version {v} .* re-ingest the table"):
            PageStore(tmp_path / "t")
    man.write_text(json.dumps({**d, "format_version": 9}))
    with pytest.raises(StoreError, match="format version 9 is not supported .*version 4"):
        PageStore(tmp_path / "t")


@pytest.mark.parametrize("floats", ["auto", "plain"])
def test_the_float_check_reports_progress(tmp_path, taxi_orc, floats):
    scanned, written = [], []
    r = ingest(taxi_orc, tmp_path / "t", floats=floats, progress=written.append,
               scan_progress=scanned.append)
    # both bars end full, whether the pass ran or had nothing to do
    assert sum(scanned) == sum(written) == r.rows


def test_decimal_columns_are_stored_exactly_as_their_integers(tmp_path):
    """Parquet/ORC decimal columns (money as decimal(10,2)) ingest exactly, as their unscaled
    integers narrowed by their range; queries agree with DuckDB reading the same file."""
    import decimal

    import pyarrow.parquet as pq

    import bamql
    from tests.reference import assert_same_rows, duck

    rng = np.random.default_rng(5)
    n = 5000
    cents = rng.integers(-20000, 90000, n)
    fare = pa.array([decimal.Decimal(int(c)).scaleb(-2) for c in cents], pa.decimal128(10, 2))
    rate = pa.array([decimal.Decimal(int(c)).scaleb(-6) for c in rng.integers(0, 10**7, n)],
                    pa.decimal128(20, 6))  # six decimals: stays float64
    zone = pa.array(rng.integers(1, 266, n), pa.int64())
    mask = rng.random(n) < 0.02
    fare = pc.if_else(pa.array(mask), pa.nulls(n, fare.type), fare)
    t = pa.table({"zone": zone, "fare": fare, "rate": rate})
    pq.write_table(t, tmp_path / "t.parquet")
    ingest([tmp_path / "t.parquet"], tmp_path / "d" / "trips", page_size=512)
    with PageStore(tmp_path / "d" / "trips") as s:
        # exactly: the unscaled integers, narrowed by their range, the type recorded
        fare_c, rate_c = s.column("fare"), s.column("rate")
        assert (fare_c.kind, fare_c.dtype, fare_c.scale, fare_c.sql_type) == \
            ("int", "int32", 0, "DECIMAL(10,2)")
        assert (rate_c.kind, rate_c.dtype, rate_c.sql_type) == ("int", "int32", "DECIMAL(20,6)")
        assert s.to_arrow("fare").equals(fare)  # read back as the very decimals
        assert s.to_arrow("rate").equals(rate)
    sql = "SELECT COUNT(fare), SUM(fare), MIN(fare), MAX(rate) FROM trips WHERE zone < 100"
    with bamql.connect(tmp_path / "d", device="cpu") as con:
        got = con.sql(sql).rows()
    want = duck(sql.replace("SUM(fare)", "SUM(CAST(fare AS DOUBLE))")
                   .replace("MIN(fare)", "CAST(MIN(fare) AS DOUBLE)")
                   .replace("MAX(rate)", "CAST(MAX(rate) AS DOUBLE)"), t)
    assert_same_rows(got, want, ordered=True)


def test_to_float64_is_correctly_rounded_for_slices_and_wide_decimals():
    import decimal

    from bamql.exactfloat import to_float64

    cents = np.arange(-5000, 5000, 7)
    a = pa.array([decimal.Decimal(int(c)).scaleb(-2) for c in cents], pa.decimal128(12, 2))
    assert np.array_equal(to_float64(a), cents / 100.0)
    sl = a.slice(100, 50)  # an offset into the buffer
    assert np.array_equal(to_float64(sl), cents[100:150] / 100.0)
    wide = a.cast(pa.decimal128(38, 2))  # over 18 digits: Arrow's cast, NaN for null
    nul = pa.array([None, decimal.Decimal("1.5")], pa.decimal128(38, 2))
    assert np.allclose(to_float64(wide), cents / 100.0)
    assert np.isnan(to_float64(nul)[0]) and to_float64(nul)[1] == 1.5


@pytest.mark.parametrize("floats", ["auto", "plain"])
def test_an_integer_file_beside_a_float_file_rounds_to_the_nearest_double(tmp_path, floats):
    """Found by the fuzz hunt: a column that is BIGINT in one file and DOUBLE in another is
    stored as DOUBLE, and an integer beyond 2**53 in it failed the ingest with Arrow's
    'Integer value ... not in range'; it is rounded, as DuckDB's union of the files does."""
    import duckdb

    from bamql.exactfloat import to_float64

    big = 2**53 + 1
    assert to_float64(pa.array([big, None, -big])).tolist()[::2] == [float(big), -float(big)]
    # even whole numbers: their float sum is exact in any order
    pq.write_table(pa.table({"f": pa.array([2.0, -0.0, 4.0])}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"f": pa.array([big, None, -6], pa.int64())}), tmp_path / "b.parquet")
    files = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    ingest(files, tmp_path / "data" / "r", page_size=512, floats=floats)
    sql = "SELECT SUM(f), MIN(f), MAX(f), COUNT(*) FROM r WHERE f = {} OR f < 1"
    union = f"read_parquet([{', '.join(repr(str(p)) for p in files)}], union_by_name=true)"
    with bamql.connect(tmp_path / "data") as con:
        for c in (big, big - 1, 9007199254740992.0):
            want = duckdb.sql(sql.format(c).replace("FROM r", f"FROM {union}")).fetchall()
            assert con.sql(sql.format(c)).rows() == want
            assert want[0][3] == 3  # the big value (the nearest double, equal to all three), -0.0, -6


# -- DECIMALs held exactly (issue 41) ------------------------------------------------------
def test_unscaled_gives_a_decimals_integers_exactly():
    import decimal

    from bamql.storage.decimals import decimal_array, unscaled

    vals = [decimal.Decimal("12345678901234.5678"), None, decimal.Decimal("-0.0001"),
            decimal.Decimal("99999999999999.9999")]
    a = pa.array(vals, pa.decimal128(18, 4))
    v, nulls = unscaled(a, 4)
    assert v.tolist() == [123456789012345678, 0, -1, 999999999999999999]
    assert nulls.tolist() == [False, True, False, False]
    v, _ = unscaled(a.slice(2, 1), 6)  # an offset into the buffer, and a finer scale
    assert v.tolist() == [-100]
    assert decimal_array(*unscaled(a, 4), 18, 4).equals(a)  # back, bit for bit
    for t in (pa.decimal256(40, 4), pa.decimal128(38, 4)):  # wider types, values that fit
        assert unscaled(a.cast(t), 4)[0].tolist() == [123456789012345678, 0, -1,
                                                      999999999999999999]
    big = pa.array([decimal.Decimal("1234567890123456789.5")], pa.decimal128(38, 1))
    with pytest.raises(ValueError, match="more than 18 digits"):
        unscaled(big, 1)
    with pytest.raises(ValueError, match="more than 18 digits at scale 10"):
        unscaled(pa.array([decimal.Decimal("123456789012.5")], pa.decimal128(13, 1)), 10)


def test_decimals_and_booleans_are_stored_with_their_sql_type(tmp_path):
    import decimal
    import json

    from bamql.storage.format import MANIFEST
    from bamql.storage.partitioned import open_table

    # a DECIMAL(18,4) in one file and a BIGINT in another: a DECIMAL(23,4), as DuckDB's
    # union makes it, the integers scaled exactly
    pq.write_table(pa.table({"d": pa.array([decimal.Decimal("1.5")], pa.decimal128(18, 4)),
                             "b": [True], "x": [1.0]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"d": pa.array([7], pa.int64()), "b": [False], "x": [2.0]}),
                   tmp_path / "b.parquet")
    ingest([tmp_path / "a.parquet", tmp_path / "b.parquet"], tmp_path / "t")
    cols = {c["name"]: c for c in json.loads((tmp_path / "t" / MANIFEST).read_text())["columns"]}
    assert (cols["d"]["kind"], cols["d"]["sql_type"], cols["d"]["min"], cols["d"]["max"]) == \
        ("int", "DECIMAL(23,4)", 15000, 70000)
    assert (cols["b"]["kind"], cols["b"]["sql_type"]) == ("int", "BOOLEAN")
    assert "sql_type" not in cols["x"]  # written only when set: plain columns as before
    with open_table(tmp_path / "t") as t:
        got = t.parts[0].to_table(["d", "b"])
    assert got.column("d").to_pylist() == [decimal.Decimal("1.5"), decimal.Decimal(7)]
    assert got.column("b").to_pylist() == [True, False]


def test_a_sql_type_that_does_not_fit_the_column_is_an_inconsistency():
    from bamql.storage.format import ColumnMeta, _column_inconsistency

    class M:  # the fields _column_inconsistency reads
        rows, page_size = 10, 4096

    def meta(**kw):
        return ColumnMeta("d", "int", "int64", 0, 1, 512, min=-5, max=99, **kw)

    assert _column_inconsistency(M, meta(sql_type="DECIMAL(2,1)")) is None
    assert "SQL type" in _column_inconsistency(M, meta(sql_type="DECIMAL(1,0)"))  # 99: 2 digits
    assert "SQL type" in _column_inconsistency(M, meta(sql_type="BOOLEAN"))
    assert "SQL type" in _column_inconsistency(M, meta(sql_type="VARCHAR"))
    assert "SQL type" in _column_inconsistency(
        M, ColumnMeta("f", "float", "float64", 0, 1, 512, sql_type="DECIMAL(5,2)"))


def test_a_store_with_a_wide_decimal_is_format_6(tmp_path):
    """A 16-byte DECIMAL column is a storage type a bamql of format 5 does not know: such a
    store says format 6, which that bamql refuses as newer than itself, not as corrupt."""
    import decimal
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from bamql.storage.format import FORMAT_VERSION, WIDE_VERSION

    wide = pa.array([decimal.Decimal("12345678901234567890123.45"), None], pa.decimal128(37, 2))
    pq.write_table(pa.table({"d": wide, "k": [1, 2]}), tmp_path / "w.parquet")
    pq.write_table(pa.table({"k": [1, 2]}), tmp_path / "n.parquet")
    ingest([str(tmp_path / "w.parquet")], tmp_path / "w")
    ingest([str(tmp_path / "n.parquet")], tmp_path / "n")
    version = {n: json.loads((tmp_path / n / "manifest.json").read_text())["format_version"]
               for n in "wn"}
    assert version == {"w": WIDE_VERSION, "n": FORMAT_VERSION} and WIDE_VERSION > FORMAT_VERSION
    with PageStore(tmp_path / "w") as s:
        assert s.columns["d"].wide and s.rows == 2
