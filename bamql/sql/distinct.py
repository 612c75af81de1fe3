"""``COUNT(DISTINCT c)`` without a kernel of its own.

``c`` is a small-domain column (one a GROUP BY accepts), so the kernel groups by the query's
keys and ``c`` as well, counting ``c``'s non-NULL values per group (``COUNT(c)``). On the
host the groups are regrouped in two steps (``api.session``): first to the output keys
and ``c`` (for a join, its dimension columns: several join keys may share a dimension value
and a value of ``c``), where each group with a count becomes 1; then ``c`` is dropped, and
those ones add up to the number of distinct non-NULL values. The query's other aggregates
are combined in both steps as a join's regroup combines them.

A query with ``COUNT(DISTINCT)`` runs as a ``JoinQuery`` (with no join of its own where it
has none): ``fact`` has ``c`` as its last group key, ``distinct`` lists the aggregates that
count distinct values, ``out`` counts them as ``COUNT(c)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from bamql.errors import PlanError
from bamql.fused import ir
from bamql.fused.domains import n_slots
from bamql.fused.domains import slots as group_slots
from bamql.fused.show import show
from bamql.sql.joins import JoinQuery, KeyMap
from bamql.sql.translate import MAX_GROUPS
from bamql.storage.format import ColumnMeta


def split_distinct(q: ir.Query | ir.RowQuery | JoinQuery,
                   catalog: Mapping[str, Mapping[str, ColumnMeta]]) -> ir.Query | ir.RowQuery | JoinQuery:
    """``q`` with its ``COUNT(DISTINCT c)`` run as grouped by ``c`` as well (see the module's
    text); ``q`` itself where it has none."""
    if isinstance(q, ir.RowQuery):
        return q
    out = q.out if isinstance(q, JoinQuery) else q
    js = tuple(j for j, a in enumerate(out.aggs) if a.func == ir.COUNT_DISTINCT)
    if not js:
        return q
    args = list(dict.fromkeys(out.aggs[j].arg for j in js))
    if len(args) > 1:
        raise PlanError(f"COUNT(DISTINCT) of several columns ({show(args[0])}, {show(args[1])}) "
                        "in one query is not supported")
    c = args[0]
    cols = catalog[out.table]
    aggs = tuple(ir.Agg("count", a.arg, "int", a.filter) if j in js else a
                 for j, a in enumerate(out.aggs))
    out = dataclasses.replace(out, aggs=aggs)
    fact = q.fact if isinstance(q, JoinQuery) else out
    keys = fact.keys if c in fact.keys else (*fact.keys, c)
    total = group_slots(keys, cols)
    if total is None:
        raise PlanError(f"COUNT(DISTINCT {show(c)}) with GROUP BY "
                        f"{', '.join(show(k) for k in fact.keys)} is not supported (only with "
                        "GROUP BY small-domain integer or string columns)")
    if total > MAX_GROUPS:
        raise PlanError(f"COUNT(DISTINCT {show(c)}) groups by {show(c)} as well: up to {total:,} "
                        f"groups; bamql counts distinct values of small domains only (at most "
                        f"{MAX_GROUPS:,} groups with the GROUP BY)")
    n = len(keys)
    names = tuple(f"key{i}" for i in range(n)) + tuple(f"agg{i}" for i in range(len(aggs)))
    refs = tuple(ir.KeyRef(i, k.kind) for i, k in enumerate(keys)) + \
        tuple(ir.AggRef(i, a.kind) for i, a in enumerate(aggs))
    fact = ir.Query(fact.table, fact.predicate, keys, aggs, names, refs, None, (), None)
    step = f"count distinct {show(c)}: grouped by {show(c)} as well, then regrouped"
    if isinstance(q, JoinQuery):
        return dataclasses.replace(q, fact=fact, out=out, steps=(*q.steps, step), distinct=js,
                                   distinct_key=keys.index(c))
    maps = tuple(KeyMap(i) for i in range(len(q.keys)))
    return JoinQuery(fact, out, maps, {}, (step,), js, keys.index(c))


def distinct_slots(q: JoinQuery, fact_domains, out_domains) -> tuple[tuple[np.ndarray, int],
                                                                   tuple[np.ndarray, int]]:
    """The two regroups of ``q``'s groups, each as (slot of every group, groups): fact
    groups -> (output keys, ``c``), then -> output keys (``c`` varies fastest)."""
    mid = (*out_domains, fact_domains[q.distinct_key])
    first = dataclasses.replace(q, key_maps=(*q.key_maps, KeyMap(q.distinct_key)))
    n_mid = n_slots(mid)
    return (first.slots(fact_domains, mid), n_mid), \
        (np.arange(n_mid, dtype=np.int64) // (mid[-1].size + 1), n_slots(out_domains))
