"""Bulk page checksums: eight pages hashed side by side give each page's ``page_hash``."""

from __future__ import annotations

import numpy as np
import pytest

from bamql.storage import pagemath


def _one_by_one(pages: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Each page's checksum by the scalar ``page_hash`` (compiled), a page at a time."""
    words = np.ascontiguousarray(pages).view(np.uint64)
    return np.array([pagemath.page_hash(words[i], ids[i]) for i in range(len(words))],
                    dtype=np.uint64).reshape(-1)


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 63, 64, 65, 203])
@pytest.mark.parametrize("page_size", [512, 4096])
def test_bulk_checksums_are_each_pages_hash(n, page_size):
    rng = np.random.default_rng(n + page_size)
    pages = rng.integers(0, 256, (n, page_size), dtype=np.uint8)
    ids = rng.permutation(10 * n + 1)[:n].astype(np.int64)
    want = _one_by_one(pages, ids)
    assert (pagemath.page_checksums(pages, ids) == want).all()
    for build in (pagemath._checksums_serial, pagemath._checksums_parallel):
        out = np.empty(n, np.uint64)
        build(np.ascontiguousarray(pages).view(np.uint64), ids, out)
        assert (out == want).all()


def test_large_batches_hash_on_every_core(monkeypatch):
    rng = np.random.default_rng(2)
    pages = rng.integers(0, 256, (80, 512), dtype=np.uint8)
    ids = np.arange(80)
    want = _one_by_one(pages, ids)
    used = []
    for name in ("_checksums_serial", "_checksums_parallel"):
        build = getattr(pagemath, name)
        monkeypatch.setattr(pagemath, name, lambda *a, b=build, n=name: (used.append(n), b(*a)))
    for limit, build in ((pages.nbytes + 1, "_checksums_serial"),
                         (pages.nbytes, "_checksums_parallel")):
        monkeypatch.setattr(pagemath, "PARALLEL_BYTES", limit)
        used.clear()
        assert (pagemath.page_checksums(pages, ids) == want).all() and used == [build]


def test_a_flipped_byte_changes_its_pages_checksum_alone():
    """Whichever of a block's eight lanes hashes the page."""
    rng = np.random.default_rng(1)
    pages = rng.integers(0, 256, (72, 512), dtype=np.uint8)
    ids = np.arange(1000, 1072)
    base = pagemath.page_checksums(pages, ids)
    for k in range(9):  # each lane of the first block, and the first page of the next
        edited = pages.copy()
        edited[k, 100 + k] ^= 0x10
        got = pagemath.page_checksums(edited, ids)
        assert (got != base).tolist() == [i == k for i in range(72)]
