"""The dataframe API against SQL: each frame gives the rows (and names) of its SQL, which
DuckDB checks, and refuses what SQL refuses, with the same error class and words."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import bamql
from bamql import col, count
from bamql.api.frame import QuantileMethod
from bamql.errors import UsageError
from tests.conftest import SAMPLES, read_orc
from tests.reference import assert_same_rows, duck


@pytest.fixture(scope="module", params=["generated", "sample"])
def data(request, taxi_store, taxi_orc, sample_store):
    """(session, the same rows as an Arrow table) over the generated and the real trips."""
    if request.param == "generated":
        store, table = taxi_store, read_orc(taxi_orc)
    else:
        store, table = sample_store, pa.concat_tables(pacsv.read_csv(p) for p in SAMPLES)
    with bamql.connect(store, device="cpu") as c:
        yield c, table


JAN_10, JAN_20 = datetime.datetime(2019, 1, 10), datetime.datetime(2019, 1, 20, 12, 30)

#: (frame -> Result, the same query in SQL, whether the SQL fixes the order of every row)
PAIRS = [
    # rows
    (lambda t: t.filter(col("fare_amount") > 50)
     .order_by("fare_amount", "d", "vendor_id", desc=[True, False, False])
     .limit(7, offset=2).select("vendor_id", "fare_amount", d=col("trip_distance") * 2),
     "SELECT vendor_id, fare_amount, trip_distance * 2 AS d FROM trips WHERE fare_amount > 50 "
     "ORDER BY fare_amount DESC, d, vendor_id LIMIT 7 OFFSET 2", True),
    (lambda t: t.filter(col("payment_type").isin([2, 3]) & col("tip_amount").is_not_null())
     .select("payment_type", tip=col("tip_amount"), x=-col("extra") + 1),
     "SELECT payment_type, tip_amount AS tip, -extra + 1 AS x FROM trips "
     "WHERE payment_type IN (2, 3) AND tip_amount IS NOT NULL", False),
    (lambda t: t.filter(col("pickup_datetime").between(JAN_10, JAN_20))
     .order_by("congestion_surcharge", "pickup_datetime", "total_amount", nulls_first=True)
     .head(9).select("congestion_surcharge", "pickup_datetime", "total_amount"),
     "SELECT congestion_surcharge, pickup_datetime, total_amount FROM trips WHERE "
     "pickup_datetime BETWEEN TIMESTAMP '2019-01-10' AND TIMESTAMP '2019-01-20 12:30:00' "
     "ORDER BY 1 NULLS FIRST, 2 NULLS FIRST, 3 NULLS FIRST LIMIT 9", True),
    (lambda t: t.filter(col("fare_amount") > 150).select(),
     "SELECT * FROM trips WHERE fare_amount > 150", False),
    (lambda t: t.filter(col("fare_amount") < -1000).order_by("fare_amount").select("fare_amount"),
     "SELECT fare_amount FROM trips WHERE fare_amount < -1000 ORDER BY fare_amount", True),
    # exact quantiles
    (lambda t: t.agg(m=col("trip_distance").median(), q=col("fare_amount").quantile(0.9),
                     d=col("fare_amount").quantile(0.25, method="disc"),
                     p=col("pickup_datetime").quantile(0.5, QuantileMethod.DISC)),
     "SELECT MEDIAN(trip_distance) AS m, quantile_cont(fare_amount, 0.9) AS q, "
     "quantile_disc(fare_amount, 0.25) AS d, quantile_disc(pickup_datetime, 0.5) AS p "
     "FROM trips", True),
    (lambda t: t.filter(col("fare_amount") > 10).group_by("payment_type")
     .agg(m=col("tip_amount").median(), c=col("congestion_surcharge").quantile(0.75), n=count()),
     "SELECT payment_type, MEDIAN(tip_amount) AS m, quantile_cont(congestion_surcharge, 0.75) "
     "AS c, COUNT(*) AS n FROM trips WHERE fare_amount > 10 GROUP BY 1 ORDER BY 1", True),
    (lambda t: t.filter(col("fare_amount") < -1000).agg(m=col("fare_amount").median(), n=count()),
     "SELECT MEDIAN(fare_amount) AS m, COUNT(*) AS n FROM trips WHERE fare_amount < -1000", True),
    # GROUP BY expressions, ORDER BY and LIMIT over groups
    (lambda t: t.group_by(col("passenger_count") * 2, col("pickup_datetime").hour())
     .agg(n=count(), s=col("total_amount").sum()),
     "SELECT passenger_count * 2, hour(pickup_datetime) AS hour, COUNT(*) AS n, "
     "SUM(total_amount) AS s FROM trips GROUP BY 1, 2 ORDER BY 1, 2", True),
    (lambda t: t.group_by(col("fare_amount") / 4 + 1).agg(n=count()),
     "SELECT fare_amount / 4 + 1, COUNT(*) AS n FROM trips GROUP BY 1 ORDER BY 1", True),
    (lambda t: t.group_by("pickup_location_id").order_by("n", "pickup_location_id",
                                                         desc=[True, False])
     .limit(5).agg(n=count(), far=col("trip_distance").max()),
     "SELECT pickup_location_id, COUNT(*) AS n, MAX(trip_distance) AS far FROM trips "
     "GROUP BY 1 ORDER BY n DESC, pickup_location_id LIMIT 5", True),
    (lambda t: t.group_by("vendor_id").order_by("vendor_id")
     .select("vendor_id", n=count(), tips=col("tip_amount").mean()),
     "SELECT vendor_id, COUNT(*) AS n, AVG(tip_amount) AS tips FROM trips "
     "GROUP BY vendor_id ORDER BY vendor_id", True),
    (lambda t: t.filter(col("store_and_fwd_flag") == "Y").select(n=count()),
     "SELECT COUNT(*) AS n FROM trips WHERE store_and_fwd_flag = 'Y'", True),
]


@pytest.mark.parametrize("frame, sql, ordered", PAIRS)
def test_a_frame_gives_the_rows_and_names_of_its_sql(data, frame, sql, ordered):
    con, table = data
    by_frame, by_sql = frame(con.table("trips")), con.sql(sql)
    assert by_frame.rows() == by_sql.rows()
    assert by_frame.to_arrow().column_names == by_sql.to_arrow().column_names
    assert_same_rows(by_frame.rows(), duck(sql, table), ordered=ordered)


def test_an_expression_key_is_named_by_its_sql_text(data):
    t = data[0].table("trips")
    res = t.group_by(col("passenger_count") * 2).agg(n=count())
    assert res.to_arrow().column_names == ["passenger_count * 2", "n"]


def test_the_text_a_frame_runs_is_sql_that_duckdb_runs_alike(data):
    con, table = data
    f = (con.table("trips").filter((col("tip_amount") > 0) | col("congestion_surcharge").is_null())
         .order_by("tip_amount", "vendor_id", "pickup_datetime", desc=True).limit(20))
    text = f.sql("vendor_id", "pickup_datetime", "tip_amount", half=col("tip_amount") / 2)
    assert_same_rows(con.sql(text).rows(), duck(text, table), ordered=True)


#: (frame that SQL's rules refuse, the SQL it stands for)
REFUSED = [
    (lambda t: t.agg(q=col("fare_amount").quantile(1.5)),
     "SELECT quantile_cont(fare_amount, 1.5) FROM trips"),
    (lambda t: t.agg(m=col("store_and_fwd_flag").median()),
     "SELECT MEDIAN(store_and_fwd_flag) FROM trips"),
    (lambda t: t.agg(m=(col("fare_amount") > 1).quantile(0.5, "disc")),
     "SELECT quantile_disc(fare_amount > 1, 0.5) FROM trips"),
    (lambda t: t.select("vendor_id", n=count()), "SELECT vendor_id, COUNT(*) AS n FROM trips"),
    (lambda t: t.group_by("vendor_id").order_by("payment_type").agg(n=count()),
     "SELECT vendor_id, COUNT(*) AS n FROM trips GROUP BY vendor_id ORDER BY payment_type"),
    (lambda t: t.limit(-1).select("vendor_id"), "SELECT vendor_id FROM trips LIMIT -1"),
    (lambda t: t.filter(col("pickup_datetime")).select("vendor_id"),
     "SELECT vendor_id FROM trips WHERE pickup_datetime"),
    (lambda t: t.filter(count() > 3).select("vendor_id"),
     "SELECT vendor_id FROM trips WHERE COUNT(*) > 3"),
    (lambda t: t.select(col("nope") + 1), "SELECT nope + 1 FROM trips"),
    (lambda t: t.group_by("vendor_id").select(), "SELECT * FROM trips GROUP BY vendor_id"),
]


@pytest.mark.parametrize("frame, sql", REFUSED)
def test_a_frame_refuses_what_its_sql_refuses_in_the_same_words(con, frame, sql):
    with pytest.raises(bamql.BamqlError) as by_sql:
        con.sql(sql)
    with pytest.raises(bamql.BamqlError) as by_frame:  # a name at once, a type when run
        frame(con.table("trips")).collect()
    assert type(by_frame.value) is type(by_sql.value)
    # only SQL text has positions to point at
    assert str(by_frame.value) == str(by_sql.value).split(" at line ")[0]


@pytest.fixture(scope="module")
def con(sample_store):
    with bamql.connect(sample_store, device="cpu") as c:
        yield c


@pytest.mark.parametrize("call, words", [
    (lambda t: col("fare_amount").quantile(0.5, method="avg"), "quantile method is 'cont' or"),
    (lambda t: t.order_by("a", "b", desc=[True]), "1 desc values for 2 keys"),
    (lambda t: t.order_by(), "needs at least one key"),
    (lambda t: t.filter("fare_amount > 1"), "takes a condition such as"),
    (lambda t: t.group_by(3), "expected a column name or an expression"),
])
def test_calls_the_api_does_not_take_are_a_usage_error(con, call, words):
    with pytest.raises(UsageError, match=words):
        call(con.table("trips"))


def test_constants_sql_cannot_write_are_refused(con):
    t = con.table("trips")
    with pytest.raises(bamql.PlanError, match="unsupported constant nan"):
        t.filter(col("fare_amount") > float("nan")).select("fare_amount")
    aware = datetime.datetime(2019, 1, 1, tzinfo=datetime.UTC)
    with pytest.raises(bamql.PlanError, match="without time zone"):
        t.filter(col("pickup_datetime") > aware).select("fare_amount")


def test_a_frame_is_immutable_and_each_call_gives_a_new_one(con):
    t = con.table("trips")
    f = t.filter(col("fare_amount") > 100)
    assert f.order_by("fare_amount").limit(2).sql("fare_amount") != f.sql("fare_amount")
    assert f.sql("fare_amount") == t.filter(col("fare_amount") > 100).sql("fare_amount")
    assert t.order_by("a").order_by("fare_amount").order == (("fare_amount", False, False),)


def test_a_relation_stays_lazy_and_nests_as_a_derived_table(data):
    """``agg``/``select`` return a relation: ``order_by``, ``filter``, ``select`` and ``head``
    after them nest it (no run until collected, one run however often it is read)."""
    con, table = data
    runs = []
    orig = con.sql
    con.sql = lambda text, *a: runs.append(text) or orig(text, *a)
    try:
        t = con.table("trips")
        r = (t.group_by("payment_type").agg(n=count(), tip=col("tip_amount").mean())
             .filter(col("n") > 10).order_by("tip", "payment_type", desc=[True, False]).head(3)
             .select("payment_type", share=col("n") * 1.0))
        assert runs == []  # planned, not run
        sql = ("SELECT payment_type, n * 1.0 AS share FROM (SELECT payment_type, COUNT(*) AS n, "
               "AVG(tip_amount) AS tip FROM trips GROUP BY payment_type) WHERE n > 10 "
               "ORDER BY tip DESC, payment_type LIMIT 3")  # the generated cash, no-charge and dispute
            # trips tip nothing: a tie, which the second key breaks
        assert_same_rows(r.rows(), duck(sql, table), ordered=True)
        assert r.fetchall() == r.rows() and len(r) == len(r.rows()) and len(runs) == 1
        assert r.collect() is r.collect()
    finally:
        con.sql = orig
    with pytest.raises(bamql.PlanError, match="nope"):  # in the inner SELECT: at once
        t.group_by("nope").agg(n=count())
    with pytest.raises(bamql.PlanError, match="nope"):
        t.agg(n=count()).order_by("nope").collect()
