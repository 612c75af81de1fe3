"""GPU-initiated reads through the submission/completion queues, in the CUDA simulator:
simulated GPU threads enqueue page reads, host I/O workers serve them from a real store."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("numba.cuda")

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from numba import cuda
    from bamql.gpu.device_queue import submit, wait_done
    from bamql.gpu.host_queue import HostQueue
    from bamql.storage.store import PageStore

    @cuda.jit
    def kern(pages, sq_page, sq_staging, sq_seq, sq_turn, sq_tail, qsize, cq_done, staging, out):
        i = cuda.grid(1)
        if i < pages.size:
            submit(pages[i], i, 7, sq_page, sq_staging, sq_seq, sq_turn, sq_tail, qsize)
            wait_done(i, 7, cq_done)
            for j in range(out.shape[1]):
                out[i, j] = staging[i, j]

    store = PageStore(sys.argv[1])
    rng = np.random.default_rng(1)
    n = 48
    pages = rng.integers(0, store.manifest.total_pages, n).astype(np.int64)
    want = np.empty((n, store.page_size), np.uint8)
    for k, p in enumerate(pages):
        store.read_pages(np.array([p]), want[k : k + 1])
    for qsize in (4, 64):  # 4: every entry is reused for many turns
        out = np.zeros((n, 64), np.uint8)
        with HostQueue(store, qsize, n, io_threads=8) as hq:
            kern[2, 24](pages, hq.sq_page, hq.sq_staging, hq.sq_seq, hq.sq_turn, hq.sq_tail, qsize,
                        hq.cq_done, hq.staging, out)
        assert hq.error is None, hq.error
        assert (out == want[:, :64]).all()
        # entries are freed when taken, so reads in flight are bounded by the staging pages
        assert hq.served == n and 1 <= hq.max_in_flight <= n
        print("qsize", qsize, "served", hq.served, "max in flight", hq.max_in_flight, "ok")
""")


def test_queue_protocol_in_the_simulator(taxi_store):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(taxi_store / "trips")], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("ok") == 2, r.stdout
