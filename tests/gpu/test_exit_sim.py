"""A program that leaves a GPU session open exits cleanly: the engine closes at exit, its
I/O threads stop before CUDA shuts down (in the simulator in CI; on a real GPU too)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bamql.api.session import gpu_unavailable_reason
from bamql.datasets.generator import GenParams, generate_chunk
from bamql.datasets.orc import write_orc
from bamql.storage.ingest import ingest

pytest.importorskip("numba.cuda")

PROGRAM = """
import sys, bamql
from bamql.gpu import engine
con = bamql.connect(sys.argv[1], device="gpu", backend="file", cache="1MiB")
print(con.sql("SELECT COUNT(*), AVG(fare_amount) FROM trips WHERE pickup_location_id < 100").rows())
assert len(engine._open) == 1
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("tiny")
    write_orc([generate_chunk(GenParams(rows=3000, seed=3), 0)], d / "t.orc")
    ingest([d / "t.orc"], d / "data" / "trips", page_size=512, compress="zstd")
    return d / "data"


def _run(store: Path, simulated: bool) -> None:
    env = dict(os.environ)
    if simulated:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    out = subprocess.run([sys.executable, "-c", PROGRAM, str(store)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert out.stdout.startswith("[(")


def test_a_session_left_open_exits_cleanly_in_the_simulator(tiny):
    _run(tiny, simulated=True)


@pytest.mark.gpu
@pytest.mark.skipif(gpu_unavailable_reason() is not None, reason="no GPU")
def test_a_session_left_open_exits_cleanly(tiny):
    _run(tiny, simulated=False)
