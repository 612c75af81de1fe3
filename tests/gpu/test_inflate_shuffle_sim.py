"""Byte-shuffled compressed copies decompressed on the GPU (``gpu.inflate``), in numba's CUDA
simulator with the host decoder in nvCOMP's place: columns 1, 2, 4 and 8 bytes wide, read
whole and in runs, in one batch with and without shuffled columns, land in GPU memory as
their pages; a damaged shuffled chunk and a wrong unshuffle are one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("numba.cuda")

SCRIPT = textwrap.dedent("""
    import shutil
    import tempfile
    import warnings
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from numba import cuda

    from bamql.errors import StoreError
    from bamql.gpu import inflate
    from bamql.storage.format import ColumnMeta
    from bamql.storage.ingest import ingest
    from bamql.storage.store import PageStore

    warnings.simplefilter("ignore", RuntimeWarning)  # the simulated hash's uint64 wrap-around
    rng = np.random.default_rng(8)
    n = 9001  # int64 at 512 B pages: 141 pages, chunks of 128 pages, the last one partial
    t = pa.table({
        "i8": pa.array(rng.integers(0, 100, n), pa.int64(), mask=rng.random(n) < 0.05),
        "i16": pa.array(rng.integers(1, 266, n), pa.int64(), mask=rng.random(n) < 0.05),
        "i32": pa.array(rng.integers(-10**6, 10**6, n), pa.int64()),
        "i64": pa.array(np.sort(rng.integers(0, 10**12, n)), pa.int64(),
                        mask=rng.random(n) < 0.05),
    })
    d = Path(tempfile.mkdtemp())
    pq.write_table(t, d / "t.parquet")
    ingest([d / "t.parquet"], d / "s" / "trips", page_size=512, compress="zstd")
    plain = ColumnMeta.shuffle_width
    ColumnMeta.shuffle_width = property(lambda c: 1)  # a copy as written before shuffling
    ingest([d / "t.parquet"], d / "p" / "trips", page_size=512, compress="zstd")
    ColumnMeta.shuffle_width = plain

    class Counting(inflate.HostDecoder):
        calls = 0
        flip = False

        def decode(self, comp, in_offs, in_lens, out, out_offs, out_lens):
            super().decode(comp, in_offs, in_lens, out, out_offs, out_lens)
            Counting.calls += 1
            if Counting.flip:  # a byte that decompressed wrong
                o = int(out_offs[-1]) + 5
                b = out[o : o + 1].copy_to_host()
                out[o : o + 1].copy_to_device(b ^ np.uint8(1))

    pool = ThreadPoolExecutor(4)

    def check(path, names, runs):
        inf = inflate.GpuInflater(cuda, Counting())
        with PageStore(path) as s:
            ps, cp = s.page_size, s.manifest.streams.chunk_pages
            cols = [s.column(x) for x in names]
            base = np.concatenate([[0], np.cumsum([c.n_pages * ps for c in cols])[:-1]])
            items = [(c, np.array([a for a, _ in runs[c.name]]),
                      np.array([b for _, b in runs[c.name]]), int(b))
                     for c, b in zip(cols, base)]
            out = cuda.device_array(int(sum(c.n_pages for c in cols) * ps), np.uint8)
            before = Counting.calls
            got = inf.read(s, items, out, pool, {})
            assert Counting.calls == before + 1  # one decode call per batch
            host = out.copy_to_host()
            for (c, p0, p1, b), nbytes in zip(items, got):
                pages = np.empty((c.n_pages, ps), np.uint8)
                s.read_pages(np.arange(c.first_page, c.first_page + c.n_pages), pages)
                mine = host[b : b + c.n_pages * ps].reshape(c.n_pages, ps)
                for a, z in zip(p0, p1):
                    assert (mine[a:z] == pages[a:z]).all(), (c.name, a, z)
                assert nbytes > 0
            return s.manifest.streams.shuffle

    everything = {x: [(0, 141 if x == "i64" else 1)] for x in ("i8", "i16", "i32", "i64")}
    everything["i16"] = [(0, 36)]
    everything["i32"] = [(0, 71)]
    everything["i8"] = [(0, 18)]
    shuffled = check(d / "s" / "trips", ["i8", "i16", "i32", "i64"], everything)
    assert shuffled == {"i16": 2, "i32": 4, "i64": 8}, shuffled
    # runs: the last partial chunk alone, a run across a chunk border, one page
    check(d / "s" / "trips", ["i64", "i16"], {"i64": [(130, 141)], "i16": [(0, 1), (20, 30)]})
    check(d / "s" / "trips", ["i64"], {"i64": [(120, 135)]})
    check(d / "s" / "trips", ["i8"], {"i8": [(0, 18)]})  # nothing shuffled in the batch
    assert check(d / "p" / "trips", ["i8", "i64"], everything) == {}  # a copy made before

    # a damaged shuffled chunk: caught by its checksum before it reaches the decoder
    bad = d / "bad"
    shutil.copytree(d / "s", bad)
    with PageStore(bad / "trips") as s:
        k0, offs, lens = s.stream_chunks("i64")
        at = int(offs[1]) + int(lens[1]) // 2
    z = bad / "trips" / "zst-000.bin"
    raw = bytearray(z.read_bytes())
    raw[at] ^= 0x40
    z.write_bytes(bytes(raw))
    try:
        check(bad / "trips", ["i64"], {"i64": [(0, 141)]})
    except StoreError as e:
        assert "'i64'" in str(e) and "fails its checksum" in str(e), e
        assert "\\n" not in str(e)
    else:
        raise AssertionError("a damaged chunk went unnoticed")

    # a byte the decoder gets wrong: after the unshuffle, a page fails its checksum
    Counting.flip = True
    try:
        check(d / "s" / "trips", ["i32", "i64"], {"i32": [(0, 71)], "i64": [(0, 141)]})
    except StoreError as e:
        assert "checksum mismatch" in str(e), e
    else:
        raise AssertionError("a wrong page went unnoticed")
    print("all ok")
""")


def test_shuffled_copies_decompressed_on_the_simulated_gpu():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                       timeout=900, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert "all ok" in r.stdout
