"""Generated CPU kernels kept on disk: a second process loads them instead of compiling."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bamql.kernels import diskcache
from tests.reference import assert_same_rows

SCRIPT = """
import json, sys
import bamql
from bamql.kernels import cpu_loops, diskcache
with bamql.connect(sys.argv[1], device="cpu") as con:
    rows = con.sql(sys.argv[2]).rows()
print(json.dumps({"rows": rows, "hits": cpu_loops.disk_cache_hits(),
                  "dir": str(diskcache.kernel_dir())}))
"""
SQL = "SELECT payment_type, COUNT(*), AVG(fare_amount) FROM trips WHERE trip_distance > 3 GROUP BY 1"


def _run(store, cache_dir) -> dict:
    env = dict(os.environ, BAMQL_CACHE_DIR=str(cache_dir))
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(store), SQL], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_kernels(taxi_store, tmp_path):
    first = _run(taxi_store, tmp_path / "cache")
    second = _run(taxi_store, tmp_path / "cache")
    assert first["hits"] == 0 and second["hits"] > 0  # compiled once, then loaded
    assert first["dir"] == str(tmp_path / "cache" / "kernels")
    assert sorted((tmp_path / "cache" / "kernels").glob("k_*.py"))
    assert_same_rows(second["rows"], first["rows"], ordered=False)


@pytest.mark.slow  # in CI's slow run
def test_an_unwritable_cache_directory_falls_back_to_compiling(taxi_store, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    out = _run(taxi_store, blocker / "cache")  # cannot be made under a file
    assert out["dir"] == "None" and out["hits"] == 0
    ref = _run(taxi_store, tmp_path / "ok")
    assert_same_rows(out["rows"], ref["rows"], ordered=False)


def test_the_kernel_directory_stays_bounded(tmp_path, monkeypatch):
    from bamql.kernels import diskcache

    monkeypatch.setattr(diskcache, "_dir", tmp_path)
    monkeypatch.setattr(diskcache, "_checked", True)
    monkeypatch.setattr(diskcache, "MAX_KERNELS", 10)
    (tmp_path / "__pycache__").mkdir()
    for i in range(12):
        fn, on_disk = diskcache.load(f"def kern():\n    return {i}\n", "kern")
        assert on_disk and fn() == i
        key = next(iter(sorted(tmp_path.glob("k_*.py"), key=lambda p: p.stat().st_mtime)))
        (tmp_path / "__pycache__" / f"{key.stem}.kern-1.nbi").touch()
    mods = list(tmp_path.glob("k_*.py"))
    assert len(mods) <= 10  # pruned down to 9 when the 11th came, then one more
    assert {p.stem.split(".")[0] for p in (tmp_path / "__pycache__").iterdir()} <= {m.stem for m in mods}


# -- the cache runs only its own code (hardening) ------------------------------------------
# One small generated kernel, compiled in a subprocess against a copy of a warm cache; every
# attack below must leave the answer right and run none of the planted code.
KERNEL_SCRIPT = """
import json, sys
import numpy as np
from bamql.kernels import cpu_loops, diskcache
src = ("def kern(x):\\n    s = 0\\n    for i in numba.prange(x.shape[0]):\\n"
       "        s += x[i]\\n    return s\\n")
fn = cpu_loops._compile(src, "kern")
print(json.dumps({"v": int(fn(np.arange(8, dtype=np.int64))), "hits": cpu_loops.disk_cache_hits(),
                  "dir": str(diskcache.kernel_dir())}))
"""


def _kernel(cache_dir) -> tuple[dict, str]:
    env = dict(os.environ, BAMQL_CACHE_DIR=str(cache_dir))
    r = subprocess.run([sys.executable, "-c", KERNEL_SCRIPT], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["v"] == 28  # 0 + 1 + ... + 7
    return out, r.stderr


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory):
    d = tmp_path_factory.mktemp("warm")
    first, _ = _kernel(d)
    assert first["hits"] == 0
    return d


@pytest.fixture
def cache(warm_cache, tmp_path):
    d = tmp_path / "cache"
    shutil.copytree(warm_cache, d)  # copy2: numba's stamps of the module file still match
    return d


def _files(cache, pattern):
    found = sorted((cache / "kernels").glob(pattern))
    assert found, pattern
    return found


class Evil:
    """Unpickling this creates the marker file: code from the cache directory ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def test_a_warm_cache_is_loaded_and_private(cache):
    out, _ = _kernel(cache)
    assert out["hits"] > 0
    for d in (cache / "kernels", cache / "kernels" / "__pycache__"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700


def test_a_line_appended_to_a_cached_module_does_not_run(cache, tmp_path):
    marker = tmp_path / "ran"
    for m in _files(cache, "k_*.py"):
        with open(m, "a") as f:
            f.write(f"\nopen({str(marker)!r}, 'w').write('ran')\n")
    _kernel(cache)
    assert not marker.exists()
    _kernel(cache)  # the module file was put back: nothing runs later either
    assert not marker.exists()


def test_an_edited_kernel_body_does_not_change_the_answer(cache):
    for m in _files(cache, "k_*.py"):
        m.write_text(m.read_text().replace("s += x[i]", "s += 19200"))
    _kernel(cache)  # asserts the right answer


def test_a_pickle_planted_in_numbas_index_or_data_does_not_run(cache, tmp_path):
    marker = tmp_path / "ran"
    for f in _files(cache, "__pycache__/k_*.nb[ic]"):
        f.write_bytes(pickle.dumps(Evil(marker)))
    out, _ = _kernel(cache)
    assert not marker.exists() and out["hits"] == 0  # discarded and compiled again
    out, _ = _kernel(cache)
    assert not marker.exists() and out["hits"] > 0  # ... and saved again


def test_a_cache_file_swapped_between_kernels_is_not_loaded(cache):
    nbc = _files(cache, "__pycache__/k_*.nbc")[0]
    idx = _files(cache, "__pycache__/k_*.nbi")[0]
    idx.write_bytes(nbc.read_bytes())  # validly signed, under the wrong name
    out, _ = _kernel(cache)
    assert out["hits"] == 0


@pytest.mark.parametrize("victim", ["k_*.py", pytest.param("__pycache__/k_*.nbi", marks=pytest.mark.slow),
                                    pytest.param("__pycache__/k_*.nbc", marks=pytest.mark.slow)])
def test_a_truncated_cache_file_is_rebuilt(cache, victim):
    for f in _files(cache, victim):
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    _kernel(cache)
    out, _ = _kernel(cache)
    assert out["hits"] > 0  # rebuilt, then loaded


def test_a_kernel_directory_others_can_write_is_refused_with_one_note(cache):
    (cache / "kernels").chmod(0o777)
    out, err = _kernel(cache)
    assert out["dir"] == "None" and out["hits"] == 0
    notes = [line for line in err.splitlines() if "KernelCacheWarning" in line]
    assert len(notes) == 1 and "open to other users" in notes[0], err


def test_a_damaged_or_readable_key_is_replaced(tmp_path):
    d = tmp_path / "kernels"
    d.mkdir(mode=0o700)
    key = d / ".hmac-key"
    first = diskcache._load_key(d)
    assert diskcache._load_key(d) == first and stat.S_IMODE(key.stat().st_mode) == 0o600
    key.write_bytes(first[:5])  # truncated
    second = diskcache._load_key(d)
    assert len(second) == 32 and second != first
    key.chmod(0o644)  # others could read it, and so sign files
    assert diskcache._load_key(d) != second and stat.S_IMODE(key.stat().st_mode) == 0o600


# -- GPU kernels: numba-cuda's cache files, signed the same way (no GPU needed) -------------
GPU_SRC = "def kern(x):\n    i = cuda.grid(1)\n    if i < x.shape[0]:\n        x[i] = wide_run\n"


@pytest.fixture
def kernel_dir(tmp_path, monkeypatch):
    """A fresh, private kernel directory with its key, as ``kernel_dir()`` makes one."""
    pytest.importorskip("numba.cuda.core.caching")
    d = tmp_path / "kernels"
    (d / "__pycache__").mkdir(parents=True, mode=0o700)
    d.chmod(0o700)
    monkeypatch.setattr(diskcache, "_dir", d)
    monkeypatch.setattr(diskcache, "_checked", True)
    monkeypatch.setattr(diskcache, "_key", diskcache._load_key(d))
    for name in [m for m in sys.modules if m.startswith("bamql_kernel_")]:  # another test's
        monkeypatch.delitem(sys.modules, name)
    return d


def _gpu_kernel():
    from bamql.gpu import kernel as kgpu

    header, keep = kgpu._header()
    assert keep
    py, on_disk = diskcache.load(GPU_SRC, "kern", header=header)
    assert on_disk
    return diskcache.cuda_jit(py, on_disk), header


def test_a_gpu_kernel_module_names_its_device_code(kernel_dir):
    from bamql.gpu import kernel_globals

    fn, header = _gpu_kernel()
    (mod,) = kernel_dir.glob("k_*.py")
    assert mod.read_text() == header + GPU_SRC
    assert kernel_globals.digest() in header.splitlines()[0]
    assert "from bamql.gpu.kernel_globals import (unpack_code, warp_read, warp_read_file," in header
    # the module's globals are the device functions it imports, not names injected later
    assert fn.py_func.__globals__["wide_run"] is kernel_globals.wide_run
    assert fn.py_func.__code__.co_filename == str(mod)


def test_the_device_code_digest_follows_its_source(tmp_path, monkeypatch):
    import types

    from bamql.gpu import kernel_globals

    before = kernel_globals.digest.__wrapped__()
    assert before == kernel_globals.digest() and len(before) == 24
    copy = tmp_path / "device_cache.py"
    copy.write_bytes(Path(sys.modules["bamql.gpu.device_cache"].__file__).read_bytes() + b"\n# x\n")
    monkeypatch.setitem(sys.modules, "bamql.gpu.device_cache", types.SimpleNamespace(__file__=str(copy)))
    assert kernel_globals.digest.__wrapped__() != before  # an edited device function: new kernels
    copy.unlink()
    assert kernel_globals.digest.__wrapped__() is None  # unreadable: nothing kept on disk


def test_gpu_cache_files_are_signed_and_checked(kernel_dir, tmp_path):
    from numba.cuda.core import caching

    fn, _ = _gpu_kernel()
    cache_file = fn._cache._cache_file
    assert isinstance(cache_file, caching.IndexDataCacheFile)
    assert type(cache_file).__name__ == "SignedCacheFile"
    assert fn._cache.cache_path == str(kernel_dir / "__pycache__")
    cache_file.save(("sig", "cc"), {"cubin": b"\x01\x02"})
    assert cache_file.load(("sig", "cc")) == {"cubin": b"\x01\x02"}
    (mod,) = kernel_dir.glob("k_*.py")
    nbi = sorted((kernel_dir / "__pycache__").glob(f"{mod.stem}.*.nbi"))
    nbc = sorted((kernel_dir / "__pycache__").glob(f"{mod.stem}.*.nbc"))
    assert len(nbi) == 1 and len(nbc) == 1
    for f in (*nbi, *nbc):  # an HMAC tag, then the pickle
        raw = f.read_bytes()
        assert pickle.loads(raw[32:]) is not None
    marker = tmp_path / "ran"
    nbc[0].write_bytes(nbc[0].read_bytes()[:32] + pickle.dumps(Evil(marker)))
    assert cache_file.load(("sig", "cc")) is None and not marker.exists()
    assert not nbc[0].exists()  # a file that fails its check is deleted
    nbi[0].write_bytes(pickle.dumps(Evil(marker)))
    assert cache_file.load(("sig", "cc")) is None and not marker.exists()


def test_without_a_usable_directory_a_gpu_kernel_is_compiled_in_memory(monkeypatch):
    pytest.importorskip("numba.cuda.core.caching")
    from bamql.gpu import kernel as kgpu

    monkeypatch.setattr(diskcache, "_dir", None)
    monkeypatch.setattr(diskcache, "_checked", True)
    header, _ = kgpu._header()
    py, on_disk = diskcache.load(GPU_SRC, "kern", header=header)
    assert not on_disk and py.__code__.co_filename.startswith("<bamql")
    fn = diskcache.cuda_jit(py, on_disk)
    assert type(fn._cache).__name__ == "NullCache"
