"""The GPU template's group accumulators, private to a block or a thread: few groups would
serialize on global atomics (every matching row adding into one of a few words), so each
block adds into its own copy in shared memory, merged into global memory once at its end,
and with the fewest groups each thread first adds into its own local arrays, reduced per
warp with shuffles into the block's copy (``gpu.kernel`` emits the lines these return).
"""

from __future__ import annotations

from bamql.fused import ir
from bamql.gpu.device import SIMULATOR

#: Bytes of shared memory a block's private group accumulators may take: below the 48 KiB a
#: block may hold statically, so that several blocks share an SM.
SHARED_BUDGET = 40 * 1024


#: Accumulator values (groups times arrays) at most that each thread keeps of its own (in
#: local memory, which L1 caches), reduced per warp with shuffles into the block's copy at
#: the end: with a handful of groups, even a block's shared-memory atomics serialize.
THREAD_SLOTS = 48


def thread_init(n_groups: int, shared: dict) -> list[str]:
    """Kernel lines that allocate and initialize a thread's own accumulators."""
    arrays = {k: v for k, v in shared.items() if not k.startswith("sh_R")}
    lines = [f"    tl_R = cuda.local.array({n_groups}, np.int64)"]
    lines += [f"    tl_{k[3:]} = cuda.local.array({n_groups}, {_shared_dtype(arr)})"
              for k, (arr, _, _, _) in arrays.items()]
    lines += [f"    for i0 in range({n_groups}):", "        tl_R[i0] = 0"]
    lines += [f"        tl_{k[3:]}[i0] = {init}" for k, (_, _, _, init) in arrays.items()]
    return lines


def thread_merge(n_groups: int, shared: dict) -> list[str]:
    """Kernel lines that add the threads' own accumulators into the block's: reduced per
    warp with shuffles (every lane of a warp leaves the row loop together), one shared
    atomic per warp, group and accumulator (each lane its own in the simulator)."""
    arrays = {k: v for k, v in shared.items() if not k.startswith("sh_R")}
    lines = [f"    for i0 in range({n_groups}):", "        w_R = tl_R[i0]"]
    lines += [f"        w_{k[3:]} = tl_{k[3:]}[i0]" for k in arrays]
    if not SIMULATOR:
        lines.append("        for off in (16, 8, 4, 2, 1):")
        lines.append("            w_R += cuda.shfl_down_sync(0xFFFFFFFF, w_R, off)")
        for k, (_, _, op, _) in arrays.items():
            w = f"w_{k[3:]}"
            sh = f"cuda.shfl_down_sync(0xFFFFFFFF, {w}, off)"
            lines.append(f"            {w} += {sh}" if op == "add" else f"            {w} = {op}({w}, {sh})")
    lines.append("        if lane == 0 and w_R != 0:" if not SIMULATOR else "        if w_R != 0:")
    lines.append("            cuda.atomic.add(sh_R, i0, w_R)")
    lines += [f"            cuda.atomic.{op}({k}, i0, w_{k[3:]})" for k, (_, _, op, _) in arrays.items()]
    return lines


def counts_rows(a: ir.Agg) -> bool:
    """Whether aggregate ``a`` counts the rows of its group (COUNT(*) with no FILTER): its
    count is the group's row count, kept once."""
    return a.func == "count" and a.arg is None and a.filter is None


def private_arrays(aggs) -> int:
    """The shared arrays (of 8-byte values) a grouped kernel's private accumulators take:
    the row counts and each aggregate's updates (a variance's go to global memory)."""
    n = 1
    for a in aggs:
        f = "F" if a.arg is not None and a.arg.kind == "float" else "I"
        if counts_rows(a):
            continue
        n += 1  # its count
        if a.func in ("sum", "avg"):
            n += 2 if f == "I" else 1
        elif a.func in ("min", "max"):
            n += 1
    return n


def fits_threads(n_groups: int, aggs) -> bool:
    """Whether each thread keeps its own copy of every group's accumulators first."""
    return fits_shared(n_groups, aggs) and n_groups * private_arrays(aggs) <= THREAD_SLOTS


def fits_shared(n_groups: int, aggs) -> bool:
    """Whether a block's private copy of every group's accumulators fits ``SHARED_BUDGET``.

    Few groups would serialize on global atomics (every matching row adding into one of
    a few words): each block adds into its own copy in shared memory and merges it into
    global memory once. Many groups spread their atomics and need no copy."""
    return n_groups * 8 * private_arrays(aggs) <= SHARED_BUDGET


def _shared_dtype(arr: str) -> str:
    return "np.float64" if arr == "SF" else "np.int64"


def shared_init(n_groups: int, shared: dict) -> list[str]:
    """Kernel lines that allocate and initialize a block's private accumulators."""
    lines = [f"    sh_R = cuda.shared.array({n_groups}, np.int64)"]
    arrays = {k: v for k, v in shared.items() if k.startswith("sh_") and not k.startswith("sh_R")}
    lines += [f"    {k} = cuda.shared.array({n_groups}, {_shared_dtype(arr)})"
              for k, (arr, _, _, _) in arrays.items()]
    lines += ["    i0 = cuda.threadIdx.x",
              f"    while i0 < {n_groups}:",
              "        sh_R[i0] = 0"]
    lines += [f"        {k}[i0] = {init}" for k, (_, _, _, init) in arrays.items()]
    lines += ["        i0 += cuda.blockDim.x", "    cuda.syncthreads()"]
    return lines


def shared_merge(n_groups: int, shared: dict) -> list[str]:
    """Kernel lines that merge a block's private accumulators into global memory: one
    atomic per group that the block saw and accumulator."""
    lines = ["    cuda.syncthreads()",
             "    i0 = cuda.threadIdx.x",
             f"    while i0 < {n_groups}:",
             "        n0 = sh_R[i0]",
             "        if n0 != 0:",
             "            cuda.atomic.add(R, (0, i0), n0)"]
    for k, (arr, jj, op, _) in shared.items():
        src = "n0" if k.startswith("sh_R") else f"{k}[i0]"
        lines.append(f"            cuda.atomic.{op}({arr}, (0, i0, {jj}), {src})")
    lines.append("        i0 += cuda.blockDim.x")
    return lines
