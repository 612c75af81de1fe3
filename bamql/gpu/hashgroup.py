"""The GPU kernel's hash table of groups: a GROUP BY whose keys have no dense range (a
float, a timestamp, a large range: ``planner.domains``) aggregated inside the fused kernel.

A row's keys become their canonical bits as the CPU's hash aggregation makes them
(``engine.hashagg.canonical_keys``: NULL 0 with its validity bit clear, every NaN the one
quiet NaN, -0.0 as 0.0). The table has ``capacity`` slots (a power of two), open addressing
with linear probing: ``HS`` a slot's state (0 empty, 1 being written, 2 ready), ``HK`` its
keys' bits, ``HM`` their validity bits (-1 before the slot is written, which no row's mask
is), ``HN`` the slots taken and the rows that found no slot. A row claims an empty slot by
compare-and-swap, writes its keys, fences and publishes the slot; a row that meets a slot
being written waits for it (bounded). The slot index is the row's group: the accumulators
are the dense template's, indexed by slot, in global memory.

Where more than half the slots are taken, or a row finds none, ``HN[1]`` counts it: the
run's answer is discarded and the partition runs again with a larger table
(``engine.leaves``), so a full table never gives a wrong answer. A key written twice (a
reader that saw a slot's keys before they reached its cache) is one group again when the
slots are read back: the groups are merged by their keys (``engine.hashagg``).
"""

from __future__ import annotations

import numpy as np

from bamql.planner import ir
from bamql.planner.domains import HashSlots

#: Fibonacci hashing's multiplier (2**64 / golden ratio), odd
MIX = 0x9E3779B97F4A7C15
#: Reads of a slot being written before a row gives up on it (and the run is retried)
SPIN = 1 << 20
#: The canonical NaN's bits (``engine.hashagg``)
NAN_BITS = int(np.array([np.nan]).view(np.int64)[0])
#: The first table's slots at most, and the largest table a partition retries with; a
#: GROUP BY with more groups than half of it goes to the CPU's hash aggregation
FIRST, LARGEST = 1 << 15, 1 << 22
#: How much larger a retried table is
GROWTH = 16


def first_capacity(rows: int) -> int:
    """The first table's slots for a partition of ``rows`` candidate rows: twice as many as
    there can be groups, at most ``FIRST``."""
    return int(min(FIRST, 1 << max(4, (2 * max(rows, 1) - 1).bit_length())))


def arrays(slots: HashSlots) -> dict[str, np.ndarray]:
    """The table's arrays with their initial values, shaped as the accumulators (a chunk
    axis of 1 first)."""
    c = slots.capacity
    return {"HK": np.zeros((1, c, slots.keys), np.int64),
            "HM": np.full((1, c), -1, np.int64),
            "HS": np.zeros((1, c), np.int64),
            "HN": np.zeros((1, 2), np.int64)}


def emit_slot(ec, keys: tuple[ir.Expr, ...], slots: HashSlots) -> None:
    """Emit ``g``, the row's slot in the table (0 and a count in ``HN[1]`` where it finds
    none); ``ec`` is the kernel's ``codegen.ExprCompiler``."""
    mask, half = slots.capacity - 1, slots.capacity // 2
    ec.emit("hm = 0")
    ec.emit(f"hh = np.uint64({MIX})")
    bits = []
    for i, k in enumerate(keys):
        v, ok = ec.compile(k)
        b = f"hb{i}"
        if k.kind == "float":
            ec.emit(f"{b} = np.int64(0) if (not {ok}) or {v} == 0.0 else (np.int64({NAN_BITS}) "
                    f"if {v} != {v} else np.float64({v}).view(np.int64))")
        else:
            ec.emit(f"{b} = np.int64({v}) if {ok} else np.int64(0)")
        ec.emit(f"hm |= {1 << i} if {ok} else 0")
        ec.emit(f"hh = (hh ^ np.uint64({b})) * np.uint64({MIX})")
        bits.append(b)
    same = " and ".join(["hst == 2", "HM[0, gs] == hm",
                         *(f"HK[0, gs, {i}] == {b}" for i, b in enumerate(bits))])
    ec.emit("hh = hh ^ (hh >> np.uint64(29))")
    ec.emit(f"gs = np.int64(hh & np.uint64({mask}))")
    ec.emit("g = -1")
    ec.emit(f"for gp in range({slots.capacity}):")
    ec.emit("    hst = HS[0, gs]")
    ec.emit("    if hst == 0:")
    ec.emit("        hst = cuda.atomic.cas(HS, (0, gs), 0, 1)")
    ec.emit("        if hst == 0:")
    for i, b in enumerate(bits):
        ec.emit(f"            HK[0, gs, {i}] = {b}")
    ec.emit("            HM[0, gs] = hm")
    ec.emit("            cuda.threadfence()")
    ec.emit("            cuda.atomic.exch(HS, (0, gs), 2)")
    ec.emit(f"            if cuda.atomic.add(HN, (0, 0), 1) >= {half}:")
    ec.emit("                cuda.atomic.add(HN, (0, 1), 1)")
    ec.emit("            g = gs")
    ec.emit("            break")
    ec.emit("    hw = 0")
    ec.emit(f"    while hst == 1 and hw < {SPIN}:")
    ec.emit("        hst = cuda.atomic.add(HS, (0, gs), 0)")
    ec.emit("        hw += 1")
    ec.emit("    if hst == 1:")
    ec.emit("        break")
    ec.emit(f"    if {same}:")
    ec.emit("        g = gs")
    ec.emit("        break")
    ec.emit(f"    gs = (gs + 1) & {mask}")
    ec.emit("if g < 0:")
    ec.emit("    cuda.atomic.add(HN, (0, 1), 1)")
    ec.emit("    g = 0")


def retry(acc: dict[str, np.ndarray]) -> bool:
    """Whether a run's table overflowed (its answer must be discarded)."""
    return bool(acc["HN"].reshape(-1)[1])
