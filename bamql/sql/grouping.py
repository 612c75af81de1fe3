"""Which GROUP BYs the fused kernel takes, and which go to the hash-aggregation step.

The kernel keeps dense accumulators indexed by the group keys' slots: it groups by every key
with a dense range (``fused.domains``: integer and string columns, calendar fields,
rounded decimals, integer arithmetic, conditions, date_trunc), as long as all keys together have at
most ``MAX_GROUPS`` slots. Every other GROUP BY (a plain float or timestamp, a key of a large
domain) is a *hashed* query: ``exec.hashagg`` runs it beside the kernels.
"""

from __future__ import annotations

from collections.abc import Mapping

from bamql.errors import PlanError
from bamql.fused import domains, ir
from bamql.fused.show import show
from bamql.sql.translate import MAX_GROUPS
from bamql.storage.format import ColumnMeta


def hashed(q: ir.Query, cols: Mapping[str, ColumnMeta]) -> bool:
    """Whether ``q`` groups beyond what the kernel takes (see the module's text)."""
    if not q.keys:
        return False
    slots = domains.slots(q.keys, cols)
    return slots is None or slots > MAX_GROUPS


def check_hashed(q: ir.Query) -> None:
    """Refuse, in one line, what the hash-aggregation step does not compute."""
    keys = ", ".join(show(k) for k in q.keys)
    for a in q.aggs:
        if a.func in ir.QUANTILES or a.func == ir.COUNT_DISTINCT:
            name = "COUNT(DISTINCT ...)" if a.func == ir.COUNT_DISTINCT else a.func.upper()
            raise PlanError(f"{name} with GROUP BY {keys} is not supported (only with GROUP BY "
                            "small-domain integer or string columns)")
