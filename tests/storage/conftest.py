"""Fixtures shared by the storage tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest


@pytest.fixture(scope="module")
def nully(tmp_path_factory) -> list[Path]:
    """Two Parquet files whose keys (an integer, a string, a float) hold NULLs."""
    d = tmp_path_factory.mktemp("nully")
    rng = np.random.default_rng(5)
    files = []
    for f, n in enumerate((3000, 1700)):
        k = pa.array(rng.integers(0, 30, n), mask=rng.random(n) < 0.07)
        s = pa.array(rng.choice(["x", "yy", "a", "zz", "b"], n), mask=rng.random(n) < 0.05)
        x = pa.array(rng.integers(-1000, 1000, n) / 100, mask=rng.random(n) < 0.03)
        files.append(d / f"n{f}.parquet")
        pq.write_table(pa.table({"k": k, "s": s, "x": x}), files[-1])
    return files
