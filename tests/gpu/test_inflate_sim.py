"""Compressed copies decompressed on the GPU (``gpu.inflate``), in numba's CUDA simulator
with the host decoder in nvCOMP's place: the file backend plans streams from the zstd copies,
reads chunks into GPU memory, checks every chunk and page there, and answers as the CPU
engine and DuckDB do; damage to a chunk, or pages that decompress wrong, are one-line
errors. Where a query's chunks are too few to repay the GPU's call, the host decompresses
them and the device's decoder stays idle."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

SCRIPT = textwrap.dedent("""
    import shutil
    import sys
    import tempfile
    import warnings
    from pathlib import Path
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    import bamql
    from bamql.errors import StoreError
    from bamql.gpu import inflate
    from bamql.storage import residency
    from bamql.storage.ingest import ingest
    from tests.reference import assert_same_rows, duck

    warnings.simplefilter("ignore", RuntimeWarning)  # the simulated hash's uint64 wrap-around
    residency.set_enabled(False)  # the disk's plans (zstd streams) whatever is cached

    class Counting(inflate.HostDecoder):
        calls = 0
        flip = False

        def decode(self, comp, in_offs, in_lens, out, out_offs, out_lens):
            super().decode(comp, in_offs, in_lens, out, out_offs, out_lens)
            Counting.calls += len(in_offs)
            if Counting.flip:  # a page that decompressed wrong
                o = int(out_offs[-1]) + 5
                b = out[o : o + 1].copy_to_host()
                out[o : o + 1].copy_to_device(b ^ np.uint8(1))

    inflate.make = lambda cuda: inflate.GpuInflater(cuda, Counting())
    from dataclasses import replace
    from bamql.config import Medium
    from bamql.physical import cost
    # "host": the GPU's call costs what it does and the host decompresses quickly, so the
    # few pages of this table stream from the copy decompressed by host threads, the
    # inflater idle; else a table this small streams plain where the GPU's fixed call
    # time counts: plan as if free
    HOST = sys.argv[1] == "host"
    if HOST:
        cost.DECOMPRESS_BYTES_PER_S = 1e12
    else:
        cost.MEDIA[Medium.NVCOMP] = replace(cost.NVCOMP, inflate_call_s=0.0)

    rng = np.random.default_rng(3)
    n = 20000
    t = pa.table({
        "k": pa.array(rng.integers(1, 266, n), pa.int64(), mask=rng.random(n) < 0.05),
        # few distinct values in a wide range: packed codes that zstd still compresses
        "w": pa.array(rng.choice(rng.integers(-5000, 3000, 40), n), pa.int64(),
                      mask=rng.random(n) < 0.1),
        "f": pa.array(rng.choice(rng.integers(-500, 9000, 40), n) / 100, pa.float64(),
                      mask=rng.random(n) < 0.1),
        "s": pa.array(rng.choice(["a", "bb", "ccc"], n), mask=rng.random(n) < 0.1),
    })
    d = Path(tempfile.mkdtemp())
    pq.write_table(t, d / "t.parquet")
    ingest([d / "t.parquet"], d / "data" / "trips", page_size=512, compress="zstd",
           pack=sys.argv[1] == "packed")
    queries = [
        "SELECT COUNT(*), SUM(w), MIN(f), MAX(f) FROM trips WHERE k > 20",
        "SELECT k, COUNT(*), SUM(w), AVG(f) FROM trips WHERE w > -4000 GROUP BY k",
        "SELECT s, SUM(k) FROM trips WHERE f < 80 AND k IS NOT NULL GROUP BY s",
        "SELECT COUNT(*), SUM(f) FROM trips WHERE k BETWEEN 100 AND 110",
    ]
    streamed = 0
    for q in queries:
        want = duck(q, t)
        with bamql.connect(d / "data", device="gpu", backend="file") as con:
            assert "simulator" in con.note
            planned = "zstd copy" in con.explain(q)
            before = Counting.calls
            assert_same_rows(con.sql(q).rows(), want, ordered=False)
            # decompressed "on the GPU", or on the host where the call costs more
            assert (Counting.calls > before) == (planned and not HOST)
            streamed += planned
            assert_same_rows(con.sql(q).rows(), want, ordered=False)  # resident or read again

    assert streamed >= 3, streamed

    # a damaged chunk: caught by its checksum before it reaches the decoder (the first chunk
    # of every column's copy is damaged: the planner may read a column's pages instead where
    # its copy saves almost nothing, as packed codes' copies do)
    bad = d / "bad"
    shutil.copytree(d / "data", bad)
    from bamql.storage.store import PageStore
    with PageStore(bad / "trips") as s:
        firsts = [s.stream_chunks(c)[1:] for c in ("k", "w", "f")]
    z = bad / "trips" / "zst-000.bin"
    raw = bytearray(z.read_bytes())
    for offs, lens in firsts:
        raw[int(offs[0]) + int(lens[0]) // 2] ^= 0x40
    z.write_bytes(bytes(raw))
    with bamql.connect(bad, device="gpu", backend="file") as con:
        try:
            con.sql("SELECT SUM(w), SUM(f), SUM(k) FROM trips WHERE w > -6000").rows()
        except StoreError as e:  # the host decoder's zstd may find it first
            assert "corrupt" in str(e) or "checksum" in str(e), e
            assert HOST or "fails its checksum" in str(e), e
            assert "\\n" not in str(e)
        else:
            raise AssertionError("a damaged chunk went unnoticed")

    if HOST:  # no page goes through the device's decoder
        print("all ok")
        sys.exit(0)
    # pages that decompress wrong: caught by the page checksums, checked on the device
    Counting.flip = True
    with bamql.connect(d / "data", device="gpu", backend="file") as con:
        try:
            con.sql("SELECT SUM(w), SUM(f) FROM trips WHERE k > 0").rows()
        except StoreError as e:
            assert "checksum mismatch" in str(e), e
        else:
            raise AssertionError("a wrong page went unnoticed")
    print("all ok")
""")


#: "host" (the host's decoder): the slow run; the default run's attacks
#: (``test_inflate_attack_sim``) decode on the host too
@pytest.mark.parametrize("layout", ["plain", pytest.param("host", marks=pytest.mark.slow),
                                    pytest.param("packed", marks=pytest.mark.slow)])
def test_streams_decompressed_on_the_simulated_gpu(layout):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", SCRIPT, layout], env=env, capture_output=True,
                       text=True, timeout=900,
                       cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert "all ok" in r.stdout


def test_chunks_of_page_runs_and_their_batches():
    from bamql.gpu.inflate import batches, needed_chunks

    cp = 128
    need = needed_chunks(np.array([0, 130, 255, 1000]), np.array([3, 140, 257, 1001]), cp)
    assert need.tolist() == [0, 1, 2, 7]
    assert needed_chunks(np.zeros(0, np.int64), np.zeros(0, np.int64), cp).size == 0
    lens = np.full(10, 5)
    # consecutive chunks up to the byte limit per batch; a gap always starts a new one
    assert batches(np.array([0, 1, 2, 3, 7, 8]), lens, 10) == [(0, 2), (2, 4), (4, 6)]
    assert batches(np.array([0, 1, 2]), lens, 100) == [(0, 3)]
    assert batches(np.array([4]), lens, 1) == [(0, 1)]  # one chunk over the limit still goes
    assert batches(np.zeros(0, np.int64), lens, 10) == []
