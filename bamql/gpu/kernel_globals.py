"""The names a generated GPU query kernel calls, imported by its source (``gpu.kernel``).

A kernel's module file (``kernels.diskcache``) imports its device functions from here, so
that its text alone names everything it runs. numba's on-disk cache keys a kernel by its own
file and bytecode only, not by the device functions compiled into it: the kernel's header
therefore carries :func:`digest`, a hash of the source files that define them, and a bamql
whose device code changed writes (and compiles) new kernel files instead of loading old ones.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from pathlib import Path

from numba import cuda

from bamql.gpu.device_cache import unpack_code, warp_read, warp_read_packed
from bamql.gpu.device_queue import warp_read_file, warp_read_file_packed
from bamql.kernels import wide

#: ``kernels.wide.run`` as a CUDA device function: the interpreter of wide predicates
wide_run = cuda.jit(device=True)(wide.run)

__all__ = ["digest", "unpack_code", "warp_read", "warp_read_file", "warp_read_file_packed",
           "warp_read_packed", "wide_run"]

#: The modules whose source is compiled into a kernel: this one and those it imports
#: device functions from (with what they import in turn).
DEVICE_MODULES = ("bamql.gpu.kernel_globals", "bamql.gpu.device", "bamql.gpu.device_cache",
                  "bamql.gpu.device_queue", "bamql.kernels.wide")


@functools.cache
def digest() -> str | None:
    """A hash of the source of ``DEVICE_MODULES``; None when a source cannot be read (then
    kernels are not kept on disk: nothing would tell a stale one from a current one)."""
    h = hashlib.sha256()
    for name in DEVICE_MODULES:
        path = getattr(sys.modules.get(name), "__file__", None)
        if path is None:
            return None
        try:
            data = Path(path).read_bytes()
        except OSError:
            return None
        h.update(b"\0" + name.encode() + b"\0" + data)
    return h.hexdigest()[:24]
