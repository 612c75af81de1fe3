"""The host side of GPU-initiated reads, driven by a compiled stand-in for the GPU that
follows the same ticket/turn protocol (no CUDA needed): many turns of every entry, pages of
row groups, and a corrupt page."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from numba import njit

from bamql.gpu.host_queue import HostQueue
from bamql.storage.ingest import ingest
from bamql.storage.nativeio import load_acquire, store_release
from bamql.storage.store import PageStore


def _offsets(store, pages):
    """Where each page lies in its staging buffer: 0, or for a row group's page (its whole
    block is read) its member's place in the block."""
    offs = np.zeros(len(pages), np.int64)
    for g in store.manifest.groups:
        rel = pages - g.first_page
        inside = (rel >= 0) & (rel < g.n_pages * len(g.members))
        offs[inside] = rel[inside] // g.n_pages * store.page_size
    return offs


@njit(nogil=True)
def _gpu(pages, q, turn, sq_page, sq_staging, sq_seq, done, staging, out, offs, base=0):
    """Submit ``pages`` in ticket order (tickets from ``base``, as a later kernel continues
    them) with ``staging.shape[0]`` reads in flight; copy each completed page to ``out``."""
    n_st = staging.shape[0]
    n = pages.shape[0]
    ps = out.shape[1]
    for i in range(n + n_st):
        if i >= n_st:  # the staging page's previous read: wait for it, keep its page
            j = i - n_st
            while load_acquire(done, j % n_st) != base + j + 1:
                pass
            out[j] = staging[j % n_st, offs[j] : offs[j] + ps]
        if i < n:
            k = base + i
            slot = k % q
            while load_acquire(turn, slot) != 2 * (k // q):
                pass
            sq_page[slot] = pages[i]
            sq_staging[slot] = i % n_st
            sq_seq[slot] = k + 1
            store_release(turn, slot, 2 * (k // q) + 1)


def _serve(store, pages, qsize=64, n_staging=32, threads=4):
    out = np.zeros((len(pages), store.page_size), np.uint8)
    alloc = lambda shape, dtype: np.zeros(shape, dtype)  # noqa: E731
    with HostQueue(store, qsize, n_staging, alloc=alloc, io_threads=threads) as hq:
        _gpu(pages, qsize, hq.sq_turn, hq.sq_page, hq.sq_staging, hq.sq_seq, hq.cq_done,
             hq.staging, out, _offsets(store, pages))
    return out, hq


@pytest.fixture(scope="module")
def grouped(tmp_path_factory, taxi_orc):
    d = tmp_path_factory.mktemp("queued") / "trips"
    ingest(taxi_orc, d, page_size=512, groups="auto")
    return d


#: 64 I/O threads beside the stand-in's spinning submitter: about 20 s alone on two cores, 50 s
#: where another test worker shares them; the slow run
@pytest.mark.parametrize("qsize,threads", [(8, 4), (64, 4), pytest.param(64, 64, marks=pytest.mark.slow)])
def test_workers_serve_every_request_right(grouped, qsize, threads):
    with PageStore(grouped) as s:
        pages = np.random.default_rng(qsize + threads).integers(0, s.manifest.all_pages, 3000)
        assert (pages >= s.manifest.total_pages).sum() > 100  # row-group pages too
        out, hq = _serve(s, pages, qsize=qsize, threads=threads)
        want = np.empty_like(out)
        s.read_scattered(pages, want, np.arange(len(pages)))
    assert hq.error is None and hq.served == len(pages)
    assert hq.io_threads == min(qsize, threads)
    assert (out == want).all()
    assert 1 <= hq.max_in_flight <= qsize


def test_a_corrupt_page_completes_and_is_reported(grouped, tmp_path):
    d = tmp_path / "trips"
    shutil.copytree(grouped, d)
    with PageStore(d) as s:
        p = s.shadow["total_amount"].first_page + 5
        g = s.manifest.groups[0]
    with open(d / g.file, "r+b") as fh:  # total_amount's copy of page 5
        j = g.members.index("total_amount")
        fh.seek(5 * g.block_bytes + j * 512 + 100)
        fh.write(b"\xff\x00\xff")
    with PageStore(d) as s:
        pages = np.array([3, p, 7, p + 1, 9], np.int64)
        out, hq = _serve(s, pages, qsize=8, n_staging=4)
    assert hq.served == len(pages)  # every read completed: no GPU thread left waiting
    assert hq.error is not None
    assert "checksum mismatch in column 'total_amount'" in str(hq.error)
    assert f"global page {p}" in str(hq.error)


def test_a_corrupt_member_of_a_block_is_reported_by_its_siblings_read(grouped, tmp_path):
    # a read of a group's page brings the whole block, whose every page is checked: the
    # warp may copy any of them from staging later
    d = tmp_path / "trips"
    shutil.copytree(grouped, d)
    with PageStore(d) as s:
        g = s.manifest.groups[0]
        j = g.members.index("total_amount")
        sibling = s.shadow[g.members[0] if j else g.members[1]].first_page + 5
        bad = s.shadow["total_amount"].first_page + 5
    with open(d / g.file, "r+b") as fh:  # total_amount's copy of page 5
        fh.seek(5 * g.block_bytes + j * 512 + 100)
        fh.write(b"\xff\x00\xff")
    with PageStore(d) as s:
        _, hq = _serve(s, np.array([3, sibling, 7], np.int64), qsize=8, n_staging=4)
    assert hq.served == 3 and hq.error is not None
    assert f"global page {bad}" in str(hq.error)


def test_parked_workers_wake_for_each_kernel(grouped):
    """Between kernels the workers sleep (futex); each ``begin`` wakes them, and tickets go on
    from one kernel to the next."""
    import time

    alloc = lambda shape, dtype: np.zeros(shape, dtype)  # noqa: E731
    with PageStore(grouped) as s:
        hq = HostQueue(s, 16, 8, alloc=alloc, io_threads=4).start(active=False)
        try:
            base = 0
            for kernel in range(3):
                time.sleep(0.2)  # parked
                pages = np.random.default_rng(kernel).integers(0, s.manifest.all_pages, 50)
                out = np.zeros((len(pages), s.page_size), np.uint8)
                want = np.empty_like(out)
                s.read_scattered(pages, want, np.arange(len(pages)))
                hq.begin()
                _gpu(pages, 16, hq.sq_turn, hq.sq_page, hq.sq_staging, hq.sq_seq, hq.cq_done,
                     hq.staging, out, _offsets(s, pages), base)
                hq.end()
                base += len(pages)
                assert (out == want).all()
            assert hq.served == base and hq.error is None
        finally:
            hq.stop()
