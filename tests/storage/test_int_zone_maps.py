"""Exact int64 zone maps and manifest min/max: float64 rounds integers from 2**53 on, so a
store of ids near 10**17 or 2**62 pruned with floats dropped pages that hold matches."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.orc as paorc
import pyarrow.parquet as pq
import pytest

from bamql.fused import ir
from bamql.physical.planning import prune
from bamql.sql.translate import translate
from bamql.storage.ingest import ingest
from bamql.storage.store import PageStore

BASE = 10**17
BIG = 1 << 62


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    d = tmp_path_factory.mktemp("bigint")
    rng = np.random.default_rng(3)
    ids = BASE + np.arange(200_000, dtype=np.int64)
    big = BIG + rng.permutation(9000).astype(np.int64)  # unordered: pages overlap little
    pq.write_table(pa.table({"order_id": ids}), d / "o.parquet")
    paorc.write_table(pa.table({"id": pa.array(list(big[:8999]) + [None], pa.int64())}),
                      str(d / "b.orc"))
    ingest([d / "o.parquet"], d / "orders", page_size=512)
    ingest([d / "b.orc"], d / "big", page_size=512)
    with PageStore(d / "orders") as o, PageStore(d / "big") as b:
        yield {"orders": (o, ids), "big": (b, np.append(big[:8999], 0))}


def test_zone_maps_and_manifest_are_exact_int64(stores):
    for name, col in (("orders", "order_id"), ("big", "id")):
        s, vals = stores[name]
        c = s.column(col)
        ok = np.ones(len(vals), bool)
        ok[-1] = name == "orders"  # the ORC file's last id is NULL
        assert type(c.min) is int and c.min == int(vals[ok].min()) and c.max == int(vals[ok].max())
        raw = json.loads((s.path / "manifest.json").read_text())
        assert next(x for x in raw["columns"] if x["name"] == col)["max"] == c.max
        ids = slice(c.first_page, c.first_page + c.n_pages)
        lo, hi = s.pages.izmin[ids], s.pages.izmax[ids]
        pad = np.zeros(c.n_pages * c.rows_per_page - len(vals), bool)
        pages = np.ma.masked_array(np.append(vals, np.zeros(len(pad), np.int64)),
                                   ~np.append(ok, pad)).reshape(c.n_pages, -1)
        assert lo.dtype == np.int64 and (lo == pages.min(axis=1)).all()
        assert (hi == pages.max(axis=1)).all()


@pytest.mark.parametrize("name, cond", [
    ("orders", "order_id < 100000000000159236"),
    ("orders", "order_id >= 100000000000159236"),
    ("orders", "order_id = 100000000000159237"),
    ("orders", "order_id IN (100000000000000001, 100000000000199999)"),
    ("orders", "order_id > 100000000000159235.5"),
    ("big", "id <> 4611686018427387904"),
    ("big", "id <= 4611686018427387904"),
    ("big", "id < 4611686018427387904.5"),
    ("big", "id = 4611686018427388000e0"),
])
def test_pruning_keeps_every_page_with_a_match(stores, name, cond):
    s, vals = stores[name]
    q = translate(f"SELECT COUNT(*) FROM t WHERE {cond}", {"t": s.columns})
    kept = np.zeros(s.rows, bool)
    for a, b in prune(ir.conjuncts(q.predicate), s):
        kept[a:b] = True
    if " IN " in cond:
        want = np.isin(vals, [100000000000000001, 100000000000199999])
    elif cond.endswith("e0"):  # a double: every id that rounds to it
        want = vals.astype(np.float64) == 4611686018427388000.0
    else:  # a decimal or an integer: exactly, in Python integers and fractions
        _, op, lit = cond.split()
        c = Fraction(lit)
        cmp = {"<": lambda x: x < c, "<=": lambda x: x <= c, ">": lambda x: x > c,
               ">=": lambda x: x >= c, "=": lambda x: x == c, "<>": lambda x: x != c}[op]
        want = np.array([cmp(int(x)) for x in vals])
    if name == "big":
        want[-1] = False  # NULL
    assert want.any() and not (want & ~kept).any()  # every matching row is a candidate
    assert kept.sum() < s.rows or cond.startswith("id <>")  # and pruning still prunes
