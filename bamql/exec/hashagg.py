"""Hash aggregation: the step beside the kernels for a GROUP BY they do not take (an
expression, a float or timestamp key, a condition, a key of a large domain:
``sql.grouping``).

Per partition it reads as the row step does (``exec.rows``: the filter stages on the
predicate columns, the other columns only at the matching rows), evaluates the group keys
and the aggregates' arguments per morsel, and aggregates each morsel by its distinct keys
into partial aggregates (``exec.partials``), merged as the kernels' accumulators are.
The finished groups go through the aggregate path's select list, HAVING, ORDER BY and
LIMIT (``exec.result.assemble``). On the CPU engine the kernel groups each chunk of rows
into a hash table of its own (:func:`cpu_kernel_partial`); on a GPU the fused kernel groups
into a hash table of its own (``gpu.hashgroup``, :func:`gpu_kernel_partial`); past the
largest table, the NumPy step above (:func:`numpy_partial`). Each partition is a
:class:`HashTask` that the table's runner runs, in this process or on the Dask worker that
holds the partition; the partitions' partials merge by key on the worker and the client.
"""

from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

import numpy as np

from bamql.config import Backend, Device, Medium
from bamql.exec.partials import (
    Partial,
    Vec,
    aggregate_morsel,
    merge_partials,
    no_groups,
    partial_of_slots,
)
from bamql.exec.rows import morsel_envs, row_matches, widen
from bamql.exec.runner import Declined
from bamql.fused import ir
from bamql.fused.domains import (
    LARGEST_TABLE,
    TABLE_GROWTH,
    Domain,
    HashSlots,
    TableFull,
    first_capacity,
    key_domain,
    n_slots,
)
from bamql.fused.evaluate import evaluate
from bamql.fused.show import show
from bamql.lru import LRU
from bamql.sql.translate import MAX_GROUPS
from bamql.storage.iostats import QueryStats
from bamql.storage.store import PageStore

#: EXPLAIN's line for the step on a GPU session
ON_GPU = ("hash aggregate: on the GPU, in the fused kernel's hash table of groups (where the "
          "kernel declines the query, more groups than its largest table or a key it cannot "
          "compute, the NumPy step on the CPU)")

#: Merge the morsels' partials once those after the first (the merged ones) hold more groups
#: than it and this many, or are this many (an integer sum's low halves, each below 2**32,
#: then stay far from int64's limit)
MERGE_GROUPS, MERGE_PARTS = 1 << 22, 1 << 10

def hashed_columns(q: ir.Query) -> tuple[str, ...]:
    """The columns the keys and the aggregates read, in first-use order."""
    return tuple(dict.fromkeys(c for e in (*q.keys, *q.aggs) for c in ir.columns_of(e)))


def numpy_partial(store: PageStore, q: ir.Query, medium: Medium, device: Device,
                  backend: Backend) -> tuple[Partial, QueryStats]:
    """One partition of ``q`` (a hashed GROUP BY) through the NumPy step: its partial (one
    group per key) and the statistics of what it read."""
    t1 = time.perf_counter()
    cols = hashed_columns(q)
    kinds = tuple(k.kind for k in q.keys)
    parts: list[Partial] = []
    matches, st = row_matches(store, q.table, q.predicate, cols, medium, device, backend)
    t2 = time.perf_counter()
    for env, n in morsel_envs(matches, store, cols):
        keys = [widen(*evaluate(k, env, n), n) for k in q.keys]
        args = [_arg(a, env, n) for a in q.aggs]
        parts.append(aggregate_morsel(keys, kinds, args, q.aggs))
        if len(parts) >= MERGE_PARTS or \
                sum(p.n for p in parts[1:]) > max(MERGE_GROUPS, parts[0].n):
            parts = [merge_partials(parts, q.aggs)]
    st.seconds = time.perf_counter() - t2
    st.wall_seconds = time.perf_counter() - t1 - st.compile_seconds
    return (merge_partials(parts, q.aggs) if parts else no_groups(q)), st


#: Per open store: the plans of its hashed GROUP BYs by (query, slots, medium, page cache),
#: and by ("capacity", query, keys) the hash table its last run needed. A repeated query
#: reuses its plan, so the GPU engine reuses the plan's kernel source and prepared launch
#: (kept by the plan's identity), and starts at the table that held its groups.
_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PLANS_LOCK = threading.Lock()


def _store_plans(store: PageStore) -> LRU:
    """``store``'s cache of hashed plans (made on first use; it goes with the store)."""
    with _PLANS_LOCK:
        plans = _PLANS.get(store)
        if plans is None:
            plans = _PLANS[store] = LRU(64)
        return plans


def _hash_plan(store: PageStore, q: ir.Query, slots: HashSlots, medium: Medium):
    """The plan of ``q`` with the hash table ``slots`` on ``store``, made once per
    (query, slots, medium, page cache): an open store's metadata does not change."""
    from bamql.exec.partition import page_cache, plan_partition

    resident = page_cache(store, q.columns, medium)
    key = (q, slots, medium, resident)
    plans = _store_plans(store)
    plan = plans.get(key)
    if plan is None:
        plan = plan_partition(store, q, slots, medium, resident)
        plans.put(key, plan)
    return plan


def gpu_kernel_partial(store: PageStore, q: ir.Query, hashed: tuple[int, ...],
                       dense: tuple[Domain, ...], medium: Medium, backend: Backend,
                       engine) -> tuple[Partial, QueryStats]:
    """One partition of ``q`` (a hashed GROUP BY) on the GPU ``engine``: the fused kernel
    with a hash table of groups, run again with a larger table where one overflows; its
    partial (one group per key) and statistics. Raises ``TableFull`` where the partition
    has more groups than the largest table takes."""
    from bamql.exec.partition import run_partition
    from bamql.gpu import hashgroup

    largest = LARGEST_TABLE // n_slots(dense)
    plans = _store_plans(store)
    needed = ("capacity", q, hashed, dense)  # the table the last run of the query needed
    cap = plans.get(needed) or first_capacity(store.rows)
    while True:
        plan = _hash_plan(store, q, HashSlots(cap, hashed, dense), medium)
        acc, st = run_partition(store, plan, Device.GPU, backend, engine)
        if not hashgroup.retry(acc):
            plans.put(needed, cap)
            break
        if cap * TABLE_GROWTH > largest:
            raise TableFull(q)
        cap *= TABLE_GROWTH
    # the kernel's table may hold one key in several slots: regrouped
    p = partial_of_slots(acc, q, *hashgroup.present(acc, q.keys, plan.key_domains))
    return merge_partials([p], q.aggs, regroup=True), st


def cpu_kernel_partial(store: PageStore, q: ir.Query, hashed: tuple[int, ...],
                       dense: tuple[Domain, ...], medium: Medium,
                       backend: Backend) -> tuple[Partial, QueryStats]:
    """One partition of ``q`` (a hashed GROUP BY) on the CPU engine's kernel: per morsel
    each chunk of rows groups into a hash table of its own (``kernels.cpu_loops``), read back as
    a partial; the partials merged by their keys (one group per key) with the statistics.
    Raises ``TableFull`` where a morsel has more groups than the largest table takes."""
    from bamql.exec.cpu import MORSEL_ROWS, run_cpu_hashed
    from bamql.exec.partition import partition_stats
    from bamql.kernels.accumulate import variance_states

    parts: list[Partial] = []

    def take(acc: dict[str, np.ndarray], slots: HashSlots) -> None:
        nonlocal parts
        nch = acc["R"].shape[0]
        for ch in range(nch):  # (an array no aggregate uses has one stand-in row)
            one = {k: v[ch:ch + 1] if len(v) == nch else v for k, v in acc.items()}
            red = {k: v[0] for k, v in one.items() if k not in ("VS", "VF")}
            if "VS" in one:
                red["VM"] = variance_states(one)
            at = np.flatnonzero(red["R"] > 0)
            h, gd = at % (slots.capacity + 2), at // (slots.capacity + 2)
            keys = np.zeros((len(at), 2 * len(q.keys)), np.int64)
            hm = red["HM"][h]
            for n, i in enumerate(slots.hashed):
                keys[:, 2 * i] = (hm >> n) & 1
                keys[:, 2 * i + 1] = red["HK"][h, n]
            slots.dense_keys(gd, tuple(k.kind for k in q.keys), keys)
            parts.append(partial_of_slots(red, q, at, keys))
        if len(parts) >= MERGE_PARTS or sum(p.n for p in parts[1:]) > max(MERGE_GROUPS, parts[0].n):
            parts = [merge_partials(parts, q.aggs, regroup=True)]

    t1 = time.perf_counter()
    slots = HashSlots(first_capacity(min(store.rows, MORSEL_ROWS)), hashed, dense)
    plan = _hash_plan(store, q, slots, medium)
    st = partition_stats(plan, store, Device.CPU, backend)
    run_cpu_hashed(plan, store, st, take)
    st.seconds = time.perf_counter() - t1 - st.compile_seconds
    st.wall_seconds = st.seconds
    return (merge_partials(parts, q.aggs, regroup=True) if parts else no_groups(q)), st


@dataclass(frozen=True)
class HashTask:
    """One partition's partial of a hashed GROUP BY (``runner.PartitionTask``): in the
    engine's kernel (the GPU's hash table of groups on a GPU, the CPU kernel's tables on
    the CPU), or with ``kernel`` False through the NumPy step. Where the kernel does not
    take the query (more groups than its largest table, a key it cannot compute) a
    partition raises ``runner.Declined`` and the operator runs it again through the NumPy
    step; the partials of one query thus always come from one way of grouping."""

    q: ir.Query
    medium: Medium
    #: the keys the kernel hashes, the dense domains of the others (``split_keys``)
    hashed: tuple[int, ...]
    dense: tuple[Domain, ...]
    kernel: bool = True

    #: the partials merge by key, in any order
    ordered: ClassVar[bool] = False

    def run(self, store: PageStore, device: Device, backend: Backend,
            engine) -> tuple[Partial, QueryStats]:
        if not self.kernel:
            return numpy_partial(store, self.q, self.medium, device, backend)
        try:
            if device == Device.GPU:
                return gpu_kernel_partial(store, self.q, self.hashed, self.dense, self.medium,
                                          backend, engine)
            return cpu_kernel_partial(store, self.q, self.hashed, self.dense, self.medium,
                                      backend)
        except TableFull:
            raise Declined("more groups than the kernel's largest hash table takes") from None
        except TypeError as e:  # a key or argument the kernel cannot compute
            if not str(e).startswith("codegen:"):
                raise
            raise Declined(str(e)) from None

    def merge(self, partials: list[Partial]) -> Partial:
        """Partials of disjoint partitions as one, one group per key."""
        return merge_partials(partials, self.q.aggs, regroup=True) if partials \
            else no_groups(self.q)

    def enough(self, partials: list[Partial]) -> bool:
        return False


def hash_task(q: ir.Query, columns, medium: Medium) -> HashTask:
    """The partition task of ``q`` (a hashed GROUP BY) over a table of ``columns`` (the
    whole table's: every partition splits its keys alike)."""
    hashed, dense = split_keys(q, columns)
    return HashTask(q, medium, hashed, dense)


#: The most slots the dense keys beside a hashed one may take together
DENSE_BESIDE = 256


def split_keys(q: ir.Query, columns) -> tuple[tuple[int, ...], tuple[Domain, ...]]:
    """Which GROUP BY keys the GPU kernel hashes (positions), and the dense domains of the
    others: the keys without a dense range (or with the largest, where all have one) are
    hashed; the rest stay dense beside them where their slots together are few, else
    every key is hashed."""
    doms = [key_domain(k, columns) for k in q.keys]
    hashed = [i for i, d in enumerate(doms) if d is None or d.size + 1 > MAX_GROUPS]
    if not hashed:
        hashed = [max(range(len(doms)), key=lambda i: doms[i].size)]
    dense = tuple(d for i, d in enumerate(doms) if i not in hashed)
    if n_slots(dense) > DENSE_BESIDE:
        return tuple(range(len(doms))), ()
    return tuple(hashed), dense




def _arg(a: ir.Agg, env, n: int) -> Vec:
    """Aggregate ``a``'s argument over ``n`` rows, valid only where its FILTER holds
    (COUNT(*): every row)."""
    if a.arg is None:
        v, ok = np.zeros(n, np.int64), np.ones(n, bool)
    else:
        v, ok = widen(*evaluate(a.arg, env, n), n)
    if a.filter is not None:
        fv, fok = widen(*evaluate(a.filter, env, n), n)
        ok = ok & fv.astype(bool) & fok
    return v, ok


class HashSite(Enum):
    """Where a hashed GROUP BY groups its rows."""

    GPU_KERNEL = "a hash table in the GPU kernel per partition, partials merged"
    CPU_KERNEL = "hash tables in the CPU kernel, one per chunk of rows, partials merged"


def explain_hashed(q: ir.Query, plan_text: str, gpu_session: bool, site: HashSite) -> str:
    """EXPLAIN of a hashed GROUP BY: its keys and aggregates, where it groups, then the plan
    that reads their columns at the matching rows."""
    lines = [f"Hash aggregate over {q.table}",
             "  group by: " + ", ".join(show(k) for k in q.keys) + f"  ({site.value})",
             "  aggregates: " + ", ".join(show(a) for a in q.aggs)]
    if gpu_session:
        lines.append(ON_GPU)
    plan = [ln.replace("Aggregate over", "Read", 1) for ln in plan_text.splitlines()
            if not ln.startswith(("  logical:", "  aggregates:"))]
    return "\n".join(lines + plan)
