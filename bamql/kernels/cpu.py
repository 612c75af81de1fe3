"""CPU templates: generated filter and aggregate loops, compiled with numba (parallel).

Both take column values already gathered for the rows in play (aligned arrays), so the
work is proportional to matching rows, and the I/O was only for the pages that hold them.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numba

from bamql.kernels import diskcache
from bamql.kernels.codegen import ExprCompiler, safe_name
from bamql.parallel import PARALLEL_LOCK
from bamql.planner import ir

_cache: dict[str, object] = {}
_cache_lock = threading.Lock()
#: numba's default threading layer runs one parallel region at a time per process.
KERNEL_LOCK = PARALLEL_LOCK


def _compile(src: str, name: str):
    with _cache_lock:
        fn = _cache.get(src)
        if fn is None:
            # from a module file where possible: numba then keeps the machine code on disk
            # and the next process loads it instead of compiling (``kernels.diskcache``)
            py, on_disk = diskcache.load(src, name)
            fn = numba.njit(parallel=True, nogil=True, error_model="numpy", cache=on_disk)(py)
            _cache[src] = fn
        return fn


def disk_cache_hits() -> int:
    """Compilations this process loaded from numba's on-disk cache instead of compiling."""
    with _cache_lock:
        return sum(sum(f.stats.cache_hits.values()) for f in _cache.values())


def kernel_cache_size() -> int:
    """Number of compiled kernels held by this process."""
    return len(_cache)


def filter_source(pred: ir.Expr, columns: Sequence[str], sentinels: dict,
                  scales: dict | None = None) -> str:
    """Source of ``kern(n, <columns>, out)``: out[i] = predicate TRUE for row i."""
    ec = ExprCompiler(lambda c: f"{safe_name(c)}[i]", sentinels, indent="        ",
                      scales=scales)
    v, ok = ec.compile(pred)
    params = ", ".join(["n", *(safe_name(c) for c in columns), "out"])  # a constant: no columns
    return "\n".join([
        f"def kern({params}):",
        "    for i in numba.prange(n):",
        *ec.lines,
        f"        out[i] = {ok} and {v}",
        "",
    ])


def filter_kernel(pred: ir.Expr, columns: Sequence[str], sentinels: dict,
                  scales: dict | None = None):
    """Compiled filter for ``pred`` over aligned arrays of ``columns``."""
    return _compile(filter_source(pred, columns, sentinels, scales), "kern")


ACC_ARRAYS = ("C", "SF", "SI", "MNF", "MXF", "MNI", "MXI")


def agg_source(keys: Sequence[ir.Expr], domains: Sequence[tuple[int, int]], aggs: Sequence[ir.Agg],
               columns: Sequence[str], sentinels: dict, scales: dict | None = None) -> str:
    """Source of ``kern(n, nch, <columns>, R, C, SF, SI, MNF, MXF, MNI, MXI)``.

    Rows are split into ``nch`` chunks, each with its own accumulator row: no atomics, and
    the caller merges chunks. ``R[ch, g]`` counts rows of group ``g``; per aggregate ``j``,
    ``C`` counts non-null inputs, ``SF``/``SI`` sum floats/ints, ``MN*``/``MX*`` min/max.
    """
    ec = ExprCompiler(lambda c: f"{safe_name(c)}[i]", sentinels, indent="            ",
                      scales=scales)
    ec.emit("g = 0")
    for k, (base, size) in zip(keys, domains, strict=True):
        v, ok = ec.compile(k)
        ec.emit(f"g = g * {size + 1} + (int({v}) - {base} if {ok} else {size})")
    ec.emit("R[ch, g] += 1")
    for j, a in enumerate(aggs):
        if a.arg is None:
            ec.emit(f"C[ch, g, {j}] += 1")
            continue
        v, ok = ec.compile(a.arg)
        ec.emit(f"if {ok}:")
        ec.emit(f"    C[ch, g, {j}] += 1")
        f = "F" if a.arg.kind == "float" else "I"
        if a.func in ("sum", "avg"):
            ec.emit(f"    S{f}[ch, g, {j}] += {v}")
        elif a.func == "min":
            ec.emit(f"    if {v} < MN{f}[ch, g, {j}]:")
            ec.emit(f"        MN{f}[ch, g, {j}] = {v}")
        elif a.func == "max":
            nan = f" or {v} != {v}" if f == "F" else ""  # NaN is the largest, as in DuckDB
            ec.emit(f"    if {v} > MX{f}[ch, g, {j}]{nan}:")
            ec.emit(f"        MX{f}[ch, g, {j}] = {v}")
    args = ", ".join(safe_name(c) for c in columns)
    return "\n".join([
        f"def kern(n, nch, {args}{', ' if args else ''}R, C, SF, SI, MNF, MXF, MNI, MXI):",
        "    for ch in numba.prange(nch):",
        "        lo = ch * n // nch",
        "        hi = (ch + 1) * n // nch",
        "        for i in range(lo, hi):",
        *ec.lines,
        "",
    ])


def agg_kernel(keys, domains, aggs, columns, sentinels, scales=None):
    """Compiled grouped aggregation over aligned arrays of ``columns``."""
    return _compile(agg_source(keys, domains, aggs, columns, sentinels, scales), "kern")
