"""Query statistics: what partitions add up to, and how EXPLAIN ANALYZE words them."""

from __future__ import annotations

import pickle

from bamql.storage.iostats import ColumnIO, QueryStats


def _part(kernel: float, gpu: float, pages: int) -> QueryStats:
    st = QueryStats("gpu", "host", rows=1000, rows_matched=10, seconds=kernel + 0.001,
                    kernel_seconds=kernel, gpu_seconds=gpu)
    st.columns["fare_amount"] = ColumnIO("fare_amount", "dependent", "cache", 4, 4000,
                                         pages_read=pages, bytes_read=pages * 512, values_needed=10)
    return st


def test_partitions_keep_their_own_kernel_times():
    total = QueryStats("gpu", "host", rows=2000)
    for p in (_part(0.003, 0.0027, 2), _part(0.004, 0.0036, 3)):
        total.absorb(pickle.loads(pickle.dumps(p)))  # as a worker's statistics arrive
    assert total.partition_kernel_seconds == [0.003, 0.004]
    assert total.partition_gpu_seconds == [0.0027, 0.0036]
    assert total.rows_matched == 20 and total.columns["fare_amount"].pages_read == 5


def test_explain_says_the_device_time_only_where_there_is_one():
    text = _part(0.003, 0.0027, 2).table_text()
    assert "3.0 ms of it from launch to results (2.7 ms the kernel on the device)" in text
    assert _part(0.003, 0.0027, 2).to_dict()["gpu_seconds"] == 0.0027
    cpu = QueryStats("cpu", "-", rows=1000, seconds=0.01)
    assert "on the device" not in cpu.table_text() and "launch" not in cpu.table_text()
