from __future__ import annotations

import threading

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import bamql
from bamql import col, count
from bamql.queries import TAXI_QUERIES, all_queries, load
from tests.conftest import SAMPLES, read_orc
from tests.reference import assert_same_rows, duck

QUERIES = all_queries()


@pytest.fixture(scope="module")
def con(taxi_store):
    with bamql.connect(taxi_store, device="cpu") as c:
        yield c


@pytest.fixture(scope="module")
def sample_con(sample_store):
    with bamql.connect(sample_store, device="cpu") as c:
        yield c


@pytest.fixture(scope="module")
def ref_table(taxi_orc):
    return read_orc(taxi_orc)


@pytest.fixture(scope="module")
def sample_table():
    return pa.concat_tables(pacsv.read_csv(p) for p in SAMPLES)


def test_at_least_sixteen_queries_and_the_bam_six():
    assert len(QUERIES) >= 16
    assert load("q01") == "SELECT AVG(trip_distance) FROM trips WHERE pickup_location_id IN (255, 256)"
    assert load("q06").count("AVG(") == 6


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_query_matches_duckdb_generated(con, ref_table, name):
    sql = QUERIES[name]
    res = con.sql(sql)
    assert_same_rows(res.rows(), duck(sql, ref_table), ordered="ORDER BY" in sql)


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_query_matches_duckdb_real_sample(sample_con, sample_table, name):
    sql = QUERIES[name]
    res = sample_con.sql(sql)
    assert_same_rows(res.rows(), duck(sql, sample_table), ordered="ORDER BY" in sql)


def _frame_q(t, n):
    metrics = ["trip_distance", "total_amount", "extra", "fare_amount", "tolls_amount", "mta_tax"][:n]
    wb = t.filter(col("pickup_location_id").isin([255, 256]))
    return wb.agg(**{f"avg_{m}": col(m).mean() for m in metrics})


@pytest.mark.parametrize("i", range(1, 7))
def test_dataframe_api_gives_the_sql_answers(con, ref_table, i):
    res = _frame_q(con.table("trips"), i)
    assert_same_rows(res.rows(), duck(load(TAXI_QUERIES[i - 1]), ref_table), ordered=True)


def test_dataframe_group_by_and_filters(con, ref_table):
    t = con.table("trips")
    res = (t.filter((col("fare_amount") > 10) & ~(col("payment_type") == 3))
           .group_by("vendor_id", col("pickup_datetime").hour())
           .agg(n=count(), tips=(col("tip_amount") + col("extra")).sum(), far=col("trip_distance").max()))
    ref = duck("SELECT vendor_id, hour(pickup_datetime), COUNT(*), SUM(tip_amount + extra), "
               "MAX(trip_distance) FROM trips WHERE fare_amount > 10 AND NOT payment_type = 3 "
               "GROUP BY 1, 2 ORDER BY 1, 2", ref_table)
    assert_same_rows(res.rows(), ref, ordered=True)
    res = t.filter(col("store_and_fwd_flag") == "Y").agg(n=count())
    assert res.rows()[0][0] == duck("SELECT COUNT(*) FROM trips WHERE store_and_fwd_flag = 'Y'",
                                    ref_table)[0][0]


def test_dataframe_errors_are_clear(con):
    with pytest.raises(bamql.PlanError, match="unknown column 'nope'"):
        con.table("trips").filter(col("nope") > 1).agg(n=count())
    with pytest.raises(bamql.PlanError, match="unknown table"):
        con.table("cabs")
    with pytest.raises(bamql.PlanError, match="needs a number"):
        con.table("trips").agg(s=col("store_and_fwd_flag").sum())


@pytest.mark.parametrize("sql, frame", [
    ("SELECT SUM(store_and_fwd_flag) FROM trips", lambda t: t.agg(s=col("store_and_fwd_flag").sum())),
])
def test_sql_and_frames_refuse_the_same_things_in_the_same_words(con, sql, frame):
    with pytest.raises(bamql.PlanError) as by_sql:
        con.sql(sql)
    with pytest.raises(bamql.PlanError) as by_frame:
        frame(con.table("trips"))
    # the same rule and message; only SQL can point at a position in its text
    assert str(by_frame.value) == str(by_sql.value).split(" at line ")[0]


@pytest.mark.parametrize("key", ["trip_distance", "pickup_datetime"])
def test_sql_and_frames_hash_group_float_and_timestamp_keys_alike(con, key):
    sql = f"SELECT {key}, COUNT(*) AS n FROM trips GROUP BY {key} ORDER BY {key}"
    by_sql = con.sql(sql)
    by_frame = con.table("trips").group_by(key).agg(n=count())
    assert by_sql.plan_text.startswith("Hash aggregate") and by_sql.rows() == by_frame.rows()


def test_explain_analyze_q6_accounts_every_byte(tmp_path, monkeypatch):
    from bamql.datasets.generator import GenParams, generate_chunk
    from bamql.datasets.orc import write_orc
    from bamql.storage.ingest import ingest
    from bamql.storage.store import PageStore

    t = generate_chunk(GenParams(rows=400_000, seed=5, williamsburg_share=0.0005), 0)
    write_orc([t], tmp_path / "t.orc")
    # 512 B pages: the 2-byte scaled floats put 2,048 rows in a 4 KiB page, and most would hold
    # one of the 200 matches
    ingest([tmp_path / "t.orc"], tmp_path / "d" / "trips", page_size=512)
    read = []
    orig = PageStore.read_pages

    def counting(self, ids, out, verify=True):
        n = orig(self, ids, out, verify)
        read.append(n)
        return n

    orig_scattered = PageStore.read_scattered

    def counting_scattered(self, ids, out, rows, verify=True):
        n = orig_scattered(self, ids, out, rows, verify)
        read.append(n)
        return n

    monkeypatch.setattr(PageStore, "read_pages", counting)
    monkeypatch.setattr(PageStore, "read_scattered", counting_scattered)
    # warm files: the planner gathers (on a cold disk it would stream these columns)
    with bamql.connect(tmp_path / "d", device="cpu", medium="cached") as c:
        res = c.sql("EXPLAIN ANALYZE " + load("q06"))
        text = "\n".join(res.to_arrow()["explain"].to_pylist())
        st = res.stats
    assert st.bytes_read == sum(read)
    for name in ("pickup_location_id", "trip_distance", "mta_tax"):
        assert name in text
    dep = [c for c in st.columns.values() if c.role == "dependent"]
    assert len(dep) == 6 and all(c.path == "gather" for c in dep)
    # gathered dependent columns read a fraction of the whole column
    assert all(c.bytes_read < 0.5 * c.whole_bytes for c in dep)
    assert st.bytes_read < st.whole_bytes / 2
    assert "amplification" in text and "whole-column reader" in text


def test_one_session_many_threads(con, ref_table):
    names = sorted(QUERIES)
    expected = {n: duck(QUERIES[n], ref_table) for n in names}
    errors = []

    def worker(k):
        try:
            for j in range(len(names)):
                n = names[(j + k) % len(names)]
                assert_same_rows(con.sql(QUERIES[n]).rows(), expected[n],
                                 ordered="ORDER BY" in QUERIES[n])
        except Exception as e:  # collected and re-raised in the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=600)
    assert not errors, errors[0]


@pytest.mark.parametrize("sql, text", [
    ("SELECT q.* FROM trips", "only trips.*"),
    ("SELECT AVG(x) FROM trips", "unknown column 'x'"),
    ("SELECT AVG(fare_amount) FROM cabs", "unknown table 'cabs'"),
    ("SELECT a.x FROM trips a JOIN trips b ON a.x = b.x", "unknown column 'x'"),
    ("SELECT fare_amount, COUNT(*) FROM trips", "GROUP BY"),
    ("DELETE FROM trips", "only SELECT"),
    ("SELEC 1", "syntax"),
    ("", "empty"),
    ("SELECT AVG(fare_amount) FROM trips WHERE store_and_fwd_flag > 3", "string"),
])
def test_unsupported_sql_fails_with_one_line(con, sql, text):
    with pytest.raises(bamql.PlanError) as ei:
        con.sql(sql)
    msg = str(ei.value)
    assert text.lower() in msg.lower() and "\n" not in msg


def test_parsed_queries_and_plans_are_reused_per_session(taxi_store):
    with bamql.connect(taxi_store, device="cpu", medium="cached") as con:
        sql = load("q06")
        first = con.sql(sql).rows()
        q = con._translate(sql)
        assert con._translate(sql) is q  # parsed once
        plan = con.plan(q)
        assert con.plan(q) is plan  # planned once per medium
        con.medium = "file"  # another medium is another plan, made afresh
        assert con.plan(q) is not plan and con.plan(q).medium == "file"
        assert_same_rows(con.sql(sql).rows(), first, ordered=False)


def test_connect_checks_the_page_size_asked_for(taxi_store):
    with bamql.connect(taxi_store, device="cpu", page_size="4KiB") as con:
        assert con.store("trips").page_size == 4096
    with pytest.raises(bamql.StoreError, match="has 4096 B pages, not 512.*--page-size 512"):
        bamql.connect(taxi_store, device="cpu", page_size=512)
    with pytest.raises(bamql.PlanError, match="page_size: not a size"):
        bamql.connect(taxi_store, device="cpu", page_size="lots")


def test_a_predicate_without_columns_compiles(con):
    """A constant condition gives a filter kernel over no columns (found by the fuzz test)."""
    every = con.sql("SELECT AVG(fare_amount) FROM trips").rows()
    assert con.sql("SELECT AVG(fare_amount) FROM trips WHERE TIMESTAMP '2019-01-01' "
                   "IN (TIMESTAMP '2019-01-01')").rows() == every
    assert con.sql("SELECT AVG(fare_amount) FROM trips WHERE TIMESTAMP '2019-01-01' IN").rows() \
        == [(None,)]


@pytest.fixture(scope="module")
def rare_store(tmp_path_factory):
    """Generated trips with 0.1% in Williamsburg, 512 B pages: value sets rule most pages out."""
    from bamql.datasets.generator import GenParams, generate_chunk
    from bamql.datasets.orc import write_orc
    from bamql.storage.ingest import ingest

    t = generate_chunk(GenParams(rows=50_000, seed=11, williamsburg_share=0.001), 0)
    d = tmp_path_factory.mktemp("rare")
    write_orc([t], d / "t.orc")
    ingest([d / "t.orc"], d / "data" / "trips", page_size=512)
    return d / "data", t


@pytest.mark.parametrize("medium", ["cached", "host", "file"])
def test_queries_over_pruned_ranges_match_duckdb(rare_store, medium):
    path, t = rare_store
    with bamql.connect(path, device="cpu", medium=medium) as c:
        for name, sql in sorted(QUERIES.items()):
            res = c.sql(sql)
            assert_same_rows(res.rows(), duck(sql, t), ordered="ORDER BY" in sql), name
        io = c.sql(load("q01")).stats.columns["pickup_location_id"]
        ranges = c.plan(c._translate(load("q01"))).ranges
        if medium == "host":  # nothing worth reading through: only pages with 255 or 256
            assert len(ranges) > 1 and io.pages_read * 4 < io.whole_bytes // 512
        if medium == "file":  # a disk reads short gaps through rather than seek
            assert len(ranges) <= 2 and io.pages_read * 2 > io.whole_bytes // 512
