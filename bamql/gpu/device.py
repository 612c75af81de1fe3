"""The CUDA device or numba's simulator: the switch, and the calls that differ between them.

The simulator (``NUMBA_ENABLE_CUDASIM=1``, CI) has NumPy arrays under its device arrays and
no driver, so typed views, memsets and host views of mapped memory take another route
there. Nothing here imports a CUDA package at module load: ``gpu_available`` is how a
CPU-only process learns why the GPU engine cannot run.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator

import numpy as np

#: numba's CUDA simulator is on (CI): the one place that reads the switch. It has no warp
#: intrinsics, so generated kernels and the cache and queue device code take stand-ins.
SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"


_ATOMIC_LOCKS = ("addlock", "sublock", "andlock", "orlock", "xorlock", "maxlock", "minlock",
                 "compare_and_swaplock", "caslock", "inclock", "declock", "exchlock")


def share_simulator_atomics() -> None:
    """Make numba's simulated atomics atomic with respect to each other.

    The simulator guards each kind of atomic with a lock of its own, so a ``cas`` and a
    ``sub`` on one word can interleave and lose an update; on a GPU they cannot. The page
    cache mixes kinds on a page's state word (``cas`` to take a reference, ``sub`` to drop
    it, ``exch`` to publish): a lost update there leaves a page BUSY with no loader and the
    simulated kernel spinning for ever. One lock for every kind restores the hardware's
    guarantee. Call it before a simulated kernel runs.
    """
    from numba.cuda.simulator import kernelapi

    lock = getattr(kernelapi, "_bamql_atomic_lock", None)
    if lock is None:
        import threading

        lock = kernelapi._bamql_atomic_lock = threading.Lock()
    for name in _ATOMIC_LOCKS:
        if hasattr(kernelapi, name):
            setattr(kernelapi, name, lock)


def share_simulator_shared_arrays() -> None:
    """Make numba's simulated ``cuda.shared.array`` give every thread of a block one array.

    The simulator keeps a block's shared arrays in a dict keyed by the calling line, and two
    threads that reach the line together can each find it empty and make an array of their
    own: the block's threads then add into different arrays, and the contributions of one
    are lost from the block's merge (or garbage from an array nobody initialized is merged).
    It shows under load as a sum or count slightly off, run to run. One lock around the
    lookup restores the hardware's single shared array. Call it before a simulated kernel
    runs (with ``share_simulator_atomics``: ``fix_simulator``).
    """
    import sys
    import threading

    from numba.core import types
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    shared = kernelapi.FakeCUDAShared
    if getattr(shared, "_bamql_locked", False):
        return
    original = shared.array
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:  # dynamic shared memory: no lookup
            return original(self, shape, dtype, alignment)
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        f = sys._getframe(1)  # the kernel's line, as the simulator keys it
        caller = (f.f_code.co_filename, f.f_lineno)
        with lock:
            res = self._allocations.get(caller)
            if res is None:
                res = self._allocations[caller] = np.empty(shape, dtype)
        return res

    shared.array = array
    shared._bamql_locked = True


class SimFloat(float):
    """``float`` in a kernel that numba's CUDA simulator runs: a division by zero is what
    a GPU's IEEE division gives (±inf, or NaN for 0/0) where Python's raises."""

    def __truediv__(self, other):
        try:
            return float.__truediv__(self, other)
        except ZeroDivisionError:
            with np.errstate(divide="ignore", invalid="ignore"):
                return float(np.float64(self) / np.float64(other))

    def __rtruediv__(self, other):
        try:
            return float.__rtruediv__(self, other)
        except ZeroDivisionError:
            with np.errstate(divide="ignore", invalid="ignore"):
                return float(np.float64(other) / np.float64(self))


def fix_simulator() -> None:
    """The simulator's atomics and shared arrays made to behave as a GPU's do."""
    share_simulator_atomics()
    share_simulator_shared_arrays()


def _driver_loads() -> bool:
    """Whether a CUDA driver library loads here, by the names numba-cuda tries on Linux (a
    driver named by ``NUMBA_CUDA_DRIVER``, or another platform, counts as present: numba
    decides)."""
    import ctypes
    import sys

    if os.environ.get("NUMBA_CUDA_DRIVER") or not sys.platform.startswith("linux"):
        return True
    for name in ("libcuda.so", "libcuda.so.1", "/usr/lib/libcuda.so", "/usr/lib/libcuda.so.1",
                 "/usr/lib64/libcuda.so", "/usr/lib64/libcuda.so.1"):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


def _numba_cuda_installed() -> bool:
    """Whether ``numba.cuda`` is there to import, found without importing numba (which
    ``find_spec("numba.cuda")`` would, a third of a second): numba-cuda's own package
    (``numba_cuda``, which it maps onto ``numba.cuda``), or a ``cuda`` package in numba's."""
    import importlib.util
    import sys

    if "numba.cuda" in sys.modules:
        return True
    try:
        if importlib.util.find_spec("numba_cuda") is not None:
            return True
        numba = importlib.util.find_spec("numba")
    except (ImportError, ValueError):
        return False
    return numba is not None and any(
        os.path.exists(os.path.join(d, "cuda", "__init__.py"))
        for d in numba.submodule_search_locations or ())


def gpu_available() -> str | None:
    """None when the GPU engine can run here, else the reason (one line)."""
    if SIMULATOR:
        return "the numba CUDA simulator is enabled (NUMBA_ENABLE_CUDASIM=1)"
    if tuple(int(x) for x in np.__version__.split(".")[:2]) >= (2, 5):
        return f"numpy {np.__version__} breaks numba-cuda; install numpy<2.5"
    if not _numba_cuda_installed():
        return "numba-cuda is not installed; pip install 'bamql[gpu]'"
    if not _driver_loads():  # a CPU-only machine: no need to import numba.cuda to know
        return "no CUDA driver or device"
    try:
        from numba import cuda
    except ImportError:
        return "numba-cuda is not installed; pip install 'bamql[gpu]'"
    try:
        if not cuda.is_available():
            return "no CUDA driver or device"
        cuda.current_context()
    except Exception as e:  # the driver's own words, one line
        words = str(e).strip().splitlines()
        return f"CUDA failed to start: {words[0] if words else type(e).__name__}"
    return None


def typed(base, dtype, byte_offset: int = 0, count: int | None = None, shape=None):
    """A typed (C-ordered) device array over part of a uint8 device or mapped buffer, no copy."""
    dt = np.dtype(dtype)
    if count is None:
        count = (base.size - byte_offset) // dt.itemsize
    shape = tuple(shape or (count,))
    if not hasattr(base, "gpu_data"):  # the simulator: NumPy arrays underneath
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        raw = np.asarray(getattr(base, "_ary", base)).reshape(-1).view(np.uint8)
        return FakeCUDAArray(raw[byte_offset : byte_offset + count * dt.itemsize].view(dt)
                             .reshape(shape))
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    strides = tuple(int(np.prod(shape[i + 1 :])) * dt.itemsize for i in range(len(shape)))
    data = base.gpu_data.view(byte_offset, byte_offset + count * dt.itemsize)
    return DeviceNDArray(shape=shape, strides=strides, dtype=dt, gpu_data=data)


def fill(arr, value: int) -> None:
    """Set every element of an integer device array to 0 or -1: a memset on the GPU (no
    host copy)."""
    if hasattr(arr, "gpu_data"):
        from numba.cuda.cudadrv import driver

        driver.device_memset(arr, value & 0xFF, arr.nbytes)
    else:  # the simulator
        arr.copy_to_device(np.full(arr.size, value, arr.dtype))


def host_view(mapped) -> np.ndarray:
    """A plain ndarray over a mapped (pinned, GPU-visible) host array, for host-side I/O."""
    if hasattr(mapped, "_ary"):  # the simulator wraps a NumPy array
        return mapped._ary
    return np.ndarray.view(mapped, np.ndarray)


def copier(dbuf, host: np.ndarray, nbytes: int, to_device: bool):
    """A call that copies ``nbytes`` between device buffer ``dbuf`` and pinned ``host``
    through the driver, without numba's checks around each copy."""
    if hasattr(dbuf, "gpu_data"):
        from numba.cuda.cudadrv import driver

        if to_device:
            return lambda: driver.host_to_device(dbuf, host, nbytes)
        return lambda: driver.device_to_host(host, dbuf, nbytes)
    if to_device:  # the simulator
        return lambda: dbuf.copy_to_device(host)
    return lambda: dbuf.copy_to_host(host)


def out_of_memory(e: BaseException) -> bool:
    """Whether ``e`` is the driver's (or numba's) out-of-memory error."""
    return "OUT_OF_MEMORY" in str(e).upper() or "out of memory" in str(e).lower()


#: numba's warning for launches of under 128 blocks. Matched by its text: numba-cuda 0.30
#: raises its own ``NumbaPerformanceWarning`` class, not ``numba.core.errors``' one, so a
#: filter by class let it through to every worker's log. Where colorama is installed numba
#: wraps the text in terminal colour codes, hence the leading ``.*`` (filters match at the start).
_SMALL_GRID = r".*Grid size \d+ will likely result in GPU under-utilization"


@contextlib.contextmanager
def small_grid_ok() -> Iterator[None]:
    """A context without numba's small-grid warning: the warm-up launch is one block on
    purpose, and a query left few candidate rows by its zone maps needs only a few."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_SMALL_GRID)
        yield
