"""Candidate row ranges as arrays: merging, page runs, windows."""

from __future__ import annotations

import numpy as np

from bamql.physical.ranges import RowRanges


def _rows(r: RowRanges) -> np.ndarray:
    return np.concatenate([np.arange(a, b) for a, b in r] or [np.zeros(0, np.int64)])


def test_blocks_become_ranges_and_compare_with_pairs():
    keep = np.array([0, 1, 1, 0, 0, 1, 0, 1], bool)
    r = RowRanges.from_blocks(keep, 10, 75)
    assert r == ((10, 30), (50, 60), (70, 75))  # the last block is cut at the table's end
    assert r.rows == 35 and len(r) == 3 and not r.is_whole(75)
    assert RowRanges.whole(75).is_whole(75) and len(RowRanges.whole(0)) == 0
    assert hash(r) == hash(RowRanges.of([(10, 30), (50, 60), (70, 75)]))
    assert not r.starts.flags.writeable  # a plan's ranges cannot be changed under it


def test_merging_joins_short_gaps_only():
    r = RowRanges.of([(0, 10), (15, 20), (40, 50)])
    assert r.merged(0) == r
    assert r.merged(5) == ((0, 20), (40, 50))
    assert r.merged(20) == ((0, 50),)


def test_page_runs_join_ranges_sharing_or_touching_pages():
    r = RowRanges.of([(0, 3), (5, 8), (20, 21), (24, 40)])
    p0, p1 = r.page_runs(4)
    # pages 0-1 (rows 0-7), page 5 (row 20) and pages 6-9 (rows 24-39) touch: one run
    assert p0.tolist() == [0, 5] and p1.tolist() == [2, 10]


def test_window_lists_the_candidate_rows_inside_it():
    rng = np.random.default_rng(3)
    keep = rng.random(500) < 0.3
    r = RowRanges.from_blocks(keep, 7, 3490)
    every = _rows(r)
    for lo, hi in [(0, 3490), (100, 101), (13, 999), (3000, 5000), (3489, 3490)]:
        want = every[(every >= lo) & (every < hi)]
        assert np.array_equal(r.clip(lo, hi).row_numbers(), want), (lo, hi)


def test_chunk_rows_map_every_candidate_to_its_row_when_aligned():
    rng = np.random.default_rng(5)
    keep = rng.random(300) < 0.4
    r = RowRanges.from_blocks(keep, 64, 300 * 64 - 17)  # the last range ends mid-chunk
    every = _rows(r)
    chunks = r.chunk_rows(32)
    t = np.arange(len(every))
    assert np.array_equal(chunks[t // 32] + t % 32, every)
    assert np.array_equal(r.offsets, np.concatenate([[0], np.cumsum(r.ends - r.starts)[:-1]]))
    # a range of 40 rows: a chunk of 32 candidates would straddle two ranges
    assert RowRanges.of([(0, 40), (64, 96)]).chunk_rows(32) is None
    assert RowRanges.of([(8, 40)]).chunk_rows(32) is None
    assert r.pages(64) == int(keep.sum()) == r.pages(64)


def test_clip_rows_and_pages_of_a_window():
    r = RowRanges.of([(0, 5), (9, 20), (30, 31), (64, 70)])
    w = r.clip(3, 40)
    assert w == ((3, 5), (9, 20), (30, 31))
    assert np.array_equal(w.row_numbers(), _rows(w)) and w.rows == 14
    assert np.array_equal(w.page_list(8), [0, 1, 2, 3])  # rows 3-4, 9-19, 30
    assert np.array_equal(r.page_list(16), [0, 1, 4])
    assert np.array_equal(RowRanges.of([(7, 9)]).row_numbers(), [7, 8])
    assert len(r.clip(40, 60)) == 0
