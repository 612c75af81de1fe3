from __future__ import annotations

import pytest

import bamql
from bamql.fused import ir
from bamql.fused.show import show_query
from bamql.physical.cost import CACHED, FILE, choose_path, touch_probability
from bamql.physical.planning import plan_query, prune
from bamql.queries import ROW_QUERIES, TREE_QUERIES, all_queries
from bamql.sql.translate import translate
from bamql.storage.store import PageStore


@pytest.fixture(scope="module")
def store(taxi_store):
    with PageStore(taxi_store / "trips") as s:
        yield s


@pytest.mark.parametrize("name", sorted(set(all_queries()) - set(ROW_QUERIES) - set(TREE_QUERIES)))
def test_queries_are_immutable_and_shown_as_one_plan_line(store, name):
    q = translate(all_queries()[name], {"trips": store.columns})
    assert translate(all_queries()[name], {"trips": store.columns}) == q
    hash(q)  # immutable and hashable
    line = show_query(q)
    assert line.startswith(("Limit(", "Sort(", "Project(")) and line.endswith(")")
    assert "Scan(trips: " in line and f"Aggregate({len(q.keys)} keys, {len(q.aggs)} aggs)" in line


def test_errors_name_the_position(store):
    with pytest.raises(bamql.PlanError, match=r"unknown column 'nope' .* at line 2, column 7"):
        translate("SELECT COUNT(*)\nWHERE nope > 1 FROM trips".replace("\nWHERE nope > 1 FROM trips",
                  " FROM trips\nWHERE nope > 1"), {"trips": store.columns})


def test_time_range_is_pruned_by_zone_maps(store):
    q = translate(all_queries()["q15"], {"trips": store.columns})
    ranges = prune(ir.conjuncts(q.predicate), store)
    kept = sum(b - a for a, b in ranges)
    assert 0 < kept < store.rows / 50  # one day of a time-ordered year


def test_cost_model_prefers_streams_when_dense_and_gathers_when_sparse():
    assert touch_probability(0.0005, 512) == pytest.approx(1 - 0.9995**512)
    assert choose_path(10_000, 512, 0.00001, 4096, FILE)[0] == "gather"
    assert choose_path(10_000, 512, 0.0005, 4096, CACHED)[0] == "gather"
    # a disk slow at random reads streams when a fifth of the pages hold a match
    assert choose_path(10_000, 512, 0.0005, 4096, FILE)[0] == "stream"
    assert choose_path(10_000, 512, 0.5, 4096, FILE)[0] == "stream"
    # a disk slow at random reads streams 512 B pages that a warm cache would gather
    assert choose_path(10_000, 64, 0.0005, 512, FILE)[0] == "stream"
    assert choose_path(10_000, 64, 0.0005, 512, CACHED)[0] == "gather"


def test_few_pages_decompress_on_the_host_many_in_one_gpu_call(monkeypatch):
    from bamql.physical import cost
    monkeypatch.setattr(cost.os, "cpu_count", lambda: 16)  # host threads: 8 x 0.25 GB/s
    host_rate = 8 * cost.DECOMPRESS_BYTES_PER_S
    call, rate = cost.NVCOMP.inflate_call_s, cost.NVCOMP.inflate_bytes_per_s
    # a clustered plan's pruned chunks: 1 MiB (or 6 MiB) costs less on the host than the call
    for out in (1 << 20, 6 << 20):
        assert not cost.inflates_on_gpu(out, cost.NVCOMP)
        assert cost.inflate_time(out, cost.NVCOMP) == pytest.approx(out / host_rate)
    # whole columns: one call, then the GPU's rate
    assert cost.inflates_on_gpu(100 << 20, cost.NVCOMP)
    assert cost.inflate_time(100 << 20, cost.NVCOMP) == pytest.approx(call + (100 << 20) / rate)
    # a medium without the GPU's decoder always decompresses on the host
    assert not cost.inflates_on_gpu(100 << 20, cost.QUEUE)
    assert cost.inflate_time(100 << 20, cost.QUEUE) == pytest.approx((100 << 20) / host_rate)
    # the planner costs a column with its share of the call; a small stream at the host's rate
    assert cost.compressed_time(16, 4096, cost.NVCOMP, 20_000) < call / cost.COLUMNS_PER_CALL
    big = 25_600  # pages of 4 KiB: 100 MiB out
    assert cost.compressed_time(big, 4096, cost.NVCOMP, 40 << 20) == pytest.approx(
        1 / cost.NVCOMP.random_reads_per_s + (40 << 20) / cost.NVCOMP.seq_bytes_per_s
        + call / cost.COLUMNS_PER_CALL + (100 << 20) / rate)


def test_stage_order_puts_selective_cheap_conjuncts_first(store):
    q = translate("SELECT COUNT(*) FROM trips WHERE fare_amount > 0 AND pickup_location_id = 255",
                  {"trips": store.columns})
    p = plan_query(q, store)
    assert p.stages[0].columns == ("pickup_location_id",)
    assert p.access_of("fare_amount").role == "predicate"


@pytest.mark.parametrize("sql", [
    "SELECT payment_type, COUNT(*) FROM trips GROUP BY 1.5",
    "SELECT payment_type, COUNT(*) FROM trips GROUP BY 1 ORDER BY 1.5",
])
def test_fractional_positions_are_one_line_errors(sql):
    from bamql.errors import PlanError
    from bamql.sql.translate import translate
    from bamql.storage.format import ColumnMeta

    cols = {"payment_type": ColumnMeta("payment_type", "int", "int8", 0, 1, 512, min=1, max=5)}
    with pytest.raises(PlanError, match="position must be a whole number"):
        translate(sql, {"trips": cols})


@pytest.mark.parametrize(("sql", "said"), [
    ("SELECT SUM(fare_amount % 2) FROM trips", "the % operator is not supported"),
    ("SELECT COUNT(*) FROM trips WHERE now() > pickup_datetime", "function now() is not supported"),
    ("SELECT COUNT(*) FROM trips WHERE vendor_id SIMILAR TO '1'", "SIMILAR TO is not supported"),
    ("SELECT COUNT(*) FROM trips WHERE fare_amount > %s", "SQL syntax error at line 1, column"),
])
def test_refusals_name_sql_not_the_parsers_classes(store, sql, said):
    with pytest.raises(bamql.PlanError) as e:
        translate(sql, {"trips": store.columns})
    msg = str(e.value)
    assert said in msg and "sqlglot" not in msg and "class" not in msg, msg
