"""Fault injection: full, read-only and size-limited file systems under the kernel cache and
an ingest's output. Each fault gives the user a clean result (a query still runs; an ingest
fails with one line naming the problem), never an internal error.

Faults are made by failing ``os.open``/``write`` calls for paths under one directory, which
runs anywhere; where this process may mount a tmpfs (root), a really full one is used too.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from bamql.kernels import diskcache

KERNEL = "def kern(x):\n    s = 0\n    for i in range(x.shape[0]):\n        s += x[i]\n    return s\n"


def _fail_opens_under(monkeypatch, root: Path, err: int) -> None:
    """Every ``os.open`` that creates or writes a file under ``root`` fails with ``err``."""
    real = os.open
    root_s = str(root)

    def fake(path, flags, *args, **kw):
        if str(path).startswith(root_s) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(err, os.strerror(err), str(path))
        return real(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", fake)


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path):
    """diskcache pointed at an empty directory, as in a new process."""
    monkeypatch.setenv("BAMQL_CACHE_DIR", str(tmp_path / "cache"))
    for name, value in (("_dir", None), ("_key", None), ("_checked", False), ("_noted", False)):
        monkeypatch.setattr(diskcache, name, value)
    return tmp_path / "cache"


def _run_kernel(src: str = KERNEL):
    py, on_disk = diskcache.load(src, "kern")
    fn = diskcache.jit(py, on_disk, nogil=True)
    assert fn(np.arange(8, dtype=np.int64)) == 28
    return on_disk


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EROFS, errno.EDQUOT])
def test_a_kernel_directory_that_cannot_be_made_compiles_in_memory(fresh_cache, monkeypatch, err):
    _fail_opens_under(monkeypatch, fresh_cache, err)
    with pytest.warns(diskcache.KernelCacheWarning, match=os.strerror(err)):
        assert diskcache.kernel_dir() is None
    assert _run_kernel() is False


def test_a_full_kernel_directory_compiles_in_memory(fresh_cache, monkeypatch):
    assert diskcache.kernel_dir() is not None  # made while there was room
    _fail_opens_under(monkeypatch, fresh_cache, errno.ENOSPC)
    assert _run_kernel() is False  # the module file cannot be written
    assert not list((fresh_cache / "kernels").glob("k_*.py"))


def test_numbas_cache_files_on_a_full_disk_are_skipped(fresh_cache, monkeypatch):
    assert diskcache.kernel_dir() is not None
    src = KERNEL.replace("s = 0", "s = 0  # full")
    diskcache.load(src, "kern")  # the module file was written while there was room
    _fail_opens_under(monkeypatch, fresh_cache / "kernels" / "__pycache__", errno.ENOSPC)
    assert _run_kernel(src) is True  # compiled; numba's files could not be saved
    assert not list((fresh_cache / "kernels" / "__pycache__").glob("*.nb*"))


def _can_mount() -> bool:
    return sys.platform == "linux" and hasattr(os, "geteuid") and os.geteuid() == 0 \
        and shutil.which("mount") is not None


@pytest.fixture
def full_tmpfs(tmp_path):
    """A 1 MiB tmpfs filled to the last byte (root only)."""
    if not _can_mount():
        pytest.skip("mounting a tmpfs needs root")
    d = tmp_path / f"tmpfs-{uuid.uuid4().hex[:6]}"
    d.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(d)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")

    def fill():
        try:
            with open(d / "filler", "ab") as f:
                while True:
                    f.write(b"\0" * 4096)
                    f.flush()
        except OSError as e:
            assert e.errno == errno.ENOSPC

    try:
        yield d, fill
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


def test_a_really_full_cache_file_system_still_answers(full_tmpfs, tmp_path):
    from tests.kernels.test_diskcache import _kernel

    d, fill = full_tmpfs
    warm = tmp_path / "warm"
    _kernel(warm)
    shutil.copytree(warm, d / "cache")
    for f in (d / "cache" / "kernels" / "__pycache__").glob("*.nb*"):
        f.unlink()  # numba must compile and try to save
    fill()
    out, _ = _kernel(d / "cache")
    assert out["hits"] == 0
    fresh, err = _kernel(d / "new")  # nothing can be made: one note, compiled in memory
    assert fresh["dir"] == "None" and "No space left" in err


# -- ingest output: full, read-only, size-limited -------------------------------------------
@pytest.fixture
def small_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = tmp_path / "small.parquet"
    pq.write_table(pa.table({"a": np.arange(50_000, dtype=np.int64),
                             "b": np.linspace(0, 1, 50_000)}), p)
    return p


def _nothing_left(parent: Path) -> None:
    assert not [p for p in parent.iterdir() if p.name.startswith(".")]  # no half-made table


@pytest.mark.parametrize("err, text", [(errno.ENOSPC, "file system is full"),
                                       (errno.EROFS, "read-only"),
                                       (errno.EFBIG, "size limit"),
                                       (errno.EDQUOT, "quota")])
def test_ingest_output_write_errors_are_one_line(small_parquet, tmp_path, monkeypatch, err, text):
    from bamql.errors import IngestError
    from bamql.storage.ingest import ingest

    out = tmp_path / "out"
    out.mkdir()

    def pwrite(fd, data, offset):  # the pages' writes fail, as on a full disk
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(os, "pwrite", pwrite)
    with pytest.raises(IngestError, match=text) as e:
        ingest([small_parquet], out / "t")
    assert "\n" not in str(e.value) and str(out / "t") in str(e.value)
    _nothing_left(out)


def test_ingest_past_the_file_size_limit_is_one_line(small_parquet, tmp_path):
    import resource

    def limit():  # 64 KiB files at most: the volume file passes it (EFBIG, not SIGXFSZ)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))

    r = subprocess.run([sys.executable, "-m", "bamql.cli", "ingest", str(small_parquet), "--out",
                        str(tmp_path / "t")], capture_output=True, text=True, timeout=300,
                       preexec_fn=limit)
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip().count("\n") == 0 and "size limit" in r.stderr, r.stderr
    assert not (tmp_path / "t").exists()
    _nothing_left(tmp_path)


def test_ingest_into_a_really_full_file_system(full_tmpfs, small_parquet):
    from bamql.errors import IngestError
    from bamql.storage.ingest import ingest

    d, fill = full_tmpfs
    fill()
    with pytest.raises(IngestError, match="file system is full"):
        ingest([small_parquet], d / "t")
    assert not (d / "t").exists()


def test_ingest_into_a_read_only_file_system(full_tmpfs, small_parquet):
    from bamql.errors import IngestError
    from bamql.storage.ingest import ingest

    d, _ = full_tmpfs
    assert subprocess.run(["mount", "-o", "remount,ro", str(d)]).returncode == 0
    with pytest.raises(IngestError, match="read-only"):
        ingest([small_parquet], d / "t")
