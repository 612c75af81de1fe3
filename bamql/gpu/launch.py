"""One plan's launch on one table, prepared once and reused by repeated queries.

numba's launch path types and converts each of the kernel's ~40 arguments on every call,
and a query's small accumulators would be a new device allocation each time. Here the
accumulators live in one device buffer reset from a pinned copy of their initial values,
the results come back into pinned memory, and after the first launch the kernel
parameters numba prepared are kept and passed straight to ``cuda.core.launch``.
"""

from __future__ import annotations

import threading

import numpy as np

from bamql.gpu.device import copier, small_grid_ok
from bamql.gpu.kernel import BLOCK


def pack(arrays: list[np.ndarray]) -> tuple[np.ndarray, list[int]]:
    """Lay small host arrays out in one buffer (8-byte aligned): one copy each way."""
    offs, pos = [], 0
    for a in arrays:
        offs.append(pos)
        pos += -(-a.nbytes // 8) * 8
    buf = np.zeros(max(pos, 8), np.uint8)
    for a, o in zip(arrays, offs, strict=True):
        buf[o : o + a.nbytes] = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
    return buf, offs


class Launch:
    """A plan's kernel arguments on one table, its accumulator buffer and its launcher.

    Parameters
    ----------
    plan
        The physical plan (held so that its id is not reused while the entry lives).
    args
        The kernel's arguments, the accumulators' device views last.
    blocks
        The grid size.
    small, offs, packed, dbuf
        The counters and accumulators' initial values, their offsets in ``packed`` (the
        buffer ``pack`` laid out) and its device copy, which the views in ``args`` share.
    volatile
        Whether the arguments include resident columns that a cache clear drops.
    acc_names
        The accumulators' names, in the order of ``small[1:]``.
    """

    def __init__(self, plan, args: tuple, blocks: int, small: list, offs: list,
                 packed: np.ndarray, dbuf, volatile: bool, acc_names: list[str]) -> None:
        from numba import cuda

        self.plan = plan
        self.acc_names = acc_names
        self.args = args
        self.blocks = blocks
        self.small, self.offs = small, offs
        self.dbuf = dbuf
        self.init = cuda.pinned_array(dbuf.size, np.uint8)
        self.init[:] = packed
        self.out = cuda.pinned_array(dbuf.size, np.uint8)
        self.volatile = volatile
        self.lock = threading.Lock()
        self.reset = copier(dbuf, self.init, dbuf.nbytes, to_device=True)
        self.fetch = copier(dbuf, self.out, dbuf.nbytes, to_device=False)
        self.fast = None  # () -> None: the prepared launch, once the first one went through
        self.tried = False
        self.events = (cuda.event(), cuda.event())  # the kernel's own time, on the device

    def launch(self, kern, prepared: bool = True) -> None:
        """Launch ``kern`` on this plan's arguments; after the first launch through numba,
        through the prepared launcher where ``prepared`` (``Config.gpu_prepared``)."""
        if self.fast is not None:
            self.fast()
            return
        with small_grid_ok():  # a query with few candidate rows: few blocks
            kern[self.blocks, BLOCK](*self.args)
        if not self.tried:
            self.tried = True
            self.fast = prepared_launch(kern, self.args, self.blocks) if prepared else None

    def results(self) -> list[np.ndarray]:
        """The counters and accumulators, copied out of the pinned result buffer."""
        return [self.out[o : o + a.nbytes].view(a.dtype).reshape(a.shape).copy()
                for a, o in zip(self.small, self.offs, strict=True)]


def prepared_launch(kern, args: tuple, blocks: int):
    """A launcher with ``args`` converted once (numba's own conversion), or None where this
    numba-cuda lays its launch out otherwise (then every query takes numba's path)."""
    if not hasattr(kern, "overloads"):
        return None
    try:
        from numba.cuda import dispatcher as nd

        if len(kern.overloads) != 1:
            return None
        kobj = next(iter(kern.overloads.values()))
        params: list = []
        retr: list = []
        for t, v in zip(kobj.argument_types, args, strict=True):
            kobj._prepare_args(t, v, 0, retr, params)
        if retr or kobj.debug or kobj.cooperative:
            return None
        kw = "is_cooperative" if nd.CUDA_CORE_GE_1_0 else "cooperative_launch"
        config = nd.LaunchConfig(grid=(blocks, 1, 1), block=(BLOCK, 1, 1), shmem_size=0,
                                 **{kw: False})
        stream = nd.driver._to_core_stream(0)
        function = kobj._codelibrary.get_cufunc().kernel
        launch = nd.launch
    except Exception:  # another numba-cuda: its own launch path still works
        return None
    return lambda: launch(stream, config, function, *params)
