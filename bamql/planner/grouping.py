"""Which GROUP BYs the fused kernel takes, and which go to the hash-aggregation step.

The kernel keeps dense accumulators indexed by the group keys' slots: it groups by integer
and dictionary-string columns and by calendar fields with a small domain, as long as all
keys together have at most ``MAX_GROUPS`` slots. Every other GROUP BY (an expression, a
float or timestamp column, a condition, a key of a large domain) is a *hashed* query:
``engine.hashagg`` runs it beside the kernels.
"""

from __future__ import annotations

from collections.abc import Mapping

from bamql.errors import PlanError
from bamql.planner import ir
from bamql.planner.show import show
from bamql.planner.translate import MAX_GROUPS, key_domain
from bamql.storage.format import ColumnMeta


def kernel_key(k: ir.Expr) -> bool:
    """Whether the kernel can group by ``k`` at all (a key with a dense slot range)."""
    if isinstance(k, ir.Col):
        return k.kind in ("int", "string")
    return isinstance(k, ir.Extract) and ir.EXTRACT_PARTS[k.part] is not None


def kernel_slots(keys, cols: Mapping[str, ColumnMeta]) -> int | None:
    """The kernel's accumulator slots for ``keys`` (None where a key is no ``kernel_key``)."""
    if not all(kernel_key(k) for k in keys):
        return None
    total = 1
    for k in keys:
        total *= key_domain(k, cols)[1] + 1
    return total


def hashed(q: ir.Query, cols: Mapping[str, ColumnMeta]) -> bool:
    """Whether ``q`` groups beyond what the kernel takes (see the module's text)."""
    if not q.keys:
        return False
    slots = kernel_slots(q.keys, cols)
    return slots is None or slots > MAX_GROUPS


def check_hashed(q: ir.Query) -> None:
    """Refuse, in one line, what the hash-aggregation step does not compute."""
    keys = ", ".join(show(k) for k in q.keys)
    for a in q.aggs:
        if a.func in ir.QUANTILES or a.func == ir.COUNT_DISTINCT:
            name = "COUNT(DISTINCT ...)" if a.func == ir.COUNT_DISTINCT else a.func.upper()
            raise PlanError(f"{name} with GROUP BY {keys} is not supported (only with GROUP BY "
                            "small-domain integer or string columns)")
