"""``pages.npz`` read in one pass (``storage.npzview``): the arrays ``numpy.load`` gives,
aligned and writable, only once the digest matches; and the page references checked without
a mask over every page (``PageStore._ref_inconsistency``)."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from bamql.errors import StoreError
from bamql.storage.npzview import DigestMismatch, read_npz
from bamql.storage.store import PageStore
from tests.conftest import edit_pages_meta


def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    return {  # names of every length mod 8 put the members' data at every misalignment
        "checksum": rng.integers(0, 2**63, 1001, dtype=np.int64).astype(np.uint64),
        "zmin": rng.random(777),
        "n": rng.integers(-5, 5, 33, dtype=np.int32),
        "ab": np.array([np.nan, -np.inf, np.inf, -0.0]),
        "izmin": rng.integers(-(2**62), 2**62, 65, dtype=np.int64),
        "sample:x": np.arange(10, dtype=np.int16),
        "vset:payment_type": rng.integers(0, 256, (7, 3), dtype=np.uint8),
        "empty": np.empty(0, np.int64),
        "scalar": np.array(7, np.int64),
        "fortran": np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4)),
        "desc:k": rng.integers(0, 256, 32, dtype=np.uint8),
    }


def _write(path: Path, arrays: dict, compressed: bool = False) -> str:
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    path.write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


def _read(path: Path, sha: str) -> dict[str, np.ndarray]:
    return read_npz(os.open(path, os.O_RDONLY), sha)


@pytest.mark.parametrize("compressed", [False, True])
def test_the_arrays_are_numpy_loads_aligned_and_writable(tmp_path, compressed):
    p = tmp_path / "pages.npz"
    sha = _write(p, _arrays(), compressed)
    got = _read(p, sha)
    with np.load(p) as z:
        want = {k: z[k] for k in z.files}
    assert list(got) == list(want)
    for k, w in want.items():
        g = got[k]
        assert (g.dtype, g.shape, g.tobytes(order="A")) == (w.dtype, w.shape, w.tobytes(order="A")), k
        assert g.flags.aligned and g.flags.writeable, k
        assert g.flags.f_contiguous if k == "fortran" else g.flags.c_contiguous, k
    got["checksum"][0] = 1  # an array of its own: writing it changes no other member
    assert (got["zmin"] == want["zmin"]).all() and (got["n"] == want["n"]).all()


def test_a_wrong_digest_is_refused_before_the_members(tmp_path):
    p = tmp_path / "pages.npz"
    _write(p, _arrays())
    with pytest.raises(DigestMismatch):
        _read(p, "0" * 64)
    p.write_bytes(b"not a zip at all" * 100)  # malformed and corrupt: corrupt is said
    with pytest.raises(DigestMismatch):
        _read(p, "0" * 64)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "short member", "pickle"])
def test_malformed_archives_with_a_matching_digest_are_refused(tmp_path, damage):
    p = tmp_path / "pages.npz"
    _write(p, {"checksum": np.arange(100, dtype=np.uint64)})
    raw = p.read_bytes()
    if damage == "truncated":
        raw = raw[: len(raw) // 2]
    elif damage == "garbage":
        raw = b"PK\x05\x06" + bytes(100)
    elif damage == "short member":  # the header promises more values than the member holds
        raw = raw.replace(b"'shape': (100,)", b"'shape': (900,)")
    else:
        buf = io.BytesIO()
        np.savez(buf, checksum=np.array([object()], dtype=object))
        raw = buf.getvalue()
    p.write_bytes(raw)
    with pytest.raises(ValueError) as e:
        _read(p, hashlib.sha256(raw).hexdigest())
    assert not isinstance(e.value, DigestMismatch)


def test_a_store_opens_with_views_of_one_buffer(taxi_store):
    with PageStore(taxi_store / "trips") as s:
        pg = s.pages
        for a in (pg.checksum, pg.zmin, pg.zmax, pg.nulls, pg.izmin, pg.izmax, pg.ref):
            assert a.flags.aligned and a.flags.writeable and a.flags.c_contiguous
        assert s.verify() == []


def test_a_reference_on_a_page_that_is_not_packed_is_refused(tmp_path, taxi_orc):
    from bamql.storage.ingest import ingest

    t = tmp_path / "trips"
    ingest(taxi_orc, t, page_size=512, pack=True, floats="plain",  # plain floats: not packed
           columns=["vendor_id", "trip_distance", "payment_type", "fare_amount"])
    with PageStore(t) as s:
        packed = [c for c in s.manifest.columns if c.bits]
        plain = [c for c in s.manifest.columns if not c.bits]
        assert packed and plain
        assert s._ref_inconsistency() is None
    for c in plain:  # the first, a middle and the last page of each plain extent
        for p in (c.first_page, c.first_page + c.n_pages // 2, c.first_page + c.n_pages - 1):
            u = tmp_path / f"u{p}"
            shutil.copytree(t, u)
            edit_pages_meta(u, lambda a, p=p: a["ref"].__setitem__(p, 3))
            with pytest.raises(StoreError, match="a page that is not packed has a reference"):
                PageStore(u)
            shutil.rmtree(u)
