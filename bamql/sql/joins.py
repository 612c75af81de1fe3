"""Joins of the fact table with small dimension tables, rewritten into a query over the
fact table alone.

A dimension table (the 265-zone lookup, anything registered with ``Session.register``) is
small and joined on a unique key, so each of its columns is a function of the fact table's
join key. The join therefore becomes:

- a WHERE condition on one dimension alias's columns -> the set ``S`` of keys whose
  dimension row passes it, evaluated here on the dimension's rows, and ``fact_key IN (S)``
  in the fact query, which zone maps and value sets prune like any ``IN`` list (an inner
  join without such a condition keeps the keys the dimension has);
- GROUP BY a dimension column -> GROUP BY the fact key in the kernel, then the groups'
  accumulators regrouped by the dimension value (``JoinQuery.slots``) before they are
  finished, so HAVING, ORDER BY, LIMIT and the select list run unchanged over ``out``.

The fact query runs through the one fused kernel as any other query does.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

import numpy as np
from sqlglot import exp

from bamql.errors import TREE_ONLY, PlanError
from bamql.fused import ir
from bamql.fused.domains import key_domain, n_slots, strides
from bamql.fused.domains import slots as group_slots
from bamql.fused.evaluate import evaluate
from bamql.fused.show import show
from bamql.sql.dimensions import Dimension
from bamql.sql.subqueries import in_subquery
from bamql.sql.translate import MAX_GROUPS, Translator, translate
from bamql.sql.valuetypes import column_value
from bamql.storage.format import ColumnMeta


class JoinKind(Enum):
    """The joins bamql runs: a fact row without a dimension row is dropped or kept."""

    INNER = "inner"
    LEFT = "left"


# -- the rewritten query -----------------------------------------------------------------
@dataclass(frozen=True)
class Joined:
    """One join: ``alias`` of dimension ``table`` matched on ``fact_key = alias.dim_key``."""

    alias: str
    table: str
    kind: JoinKind
    fact_key: str
    dim_key: str


@dataclass(frozen=True)
class KeyMap:
    """How an output group key comes from the fact query's keys: fact key ``fact_index``
    itself, or (``dim``) the dimension value of the row whose key is that fact
    key's value: its output slot ``slots[i]`` where the key equals ``dim_keys[i]`` (sorted),
    the NULL slot where no row has it."""

    fact_index: int
    dim: bool = False
    dim_keys: tuple[int, ...] = ()
    slots: tuple[int, ...] = ()


@dataclass(frozen=True)
class JoinQuery:
    """A query with joins, as what runs: ``fact`` (the fact table alone, grouped by the join
    keys) and ``out`` (the user's query, its keys including dimension columns) that the
    regrouped accumulators are finished with; ``columns`` describes the dimension columns
    ``out`` names; ``steps`` say in words what each join became (EXPLAIN); ``distinct``: the
    aggregates that count the distinct values of fact key ``distinct_key``
    (``sql.distinct``)."""

    fact: ir.Query
    out: ir.Query
    key_maps: tuple[KeyMap, ...]
    columns: Mapping[str, ColumnMeta] = field(hash=False, compare=False)
    steps: tuple[str, ...]
    distinct: tuple[int, ...] = ()
    distinct_key: int = -1

    @property
    def table(self) -> str:
        return self.fact.table

    @property
    def regroups(self) -> bool:
        """Whether groups move: some output key is a dimension column."""
        return any(m.dim for m in self.key_maps) or \
            [m.fact_index for m in self.key_maps] != list(range(len(self.fact.keys)))

    def slots(self, fact_domains, out_domains) -> np.ndarray:
        """The output group slot of every fact group slot (``accumulate.finish``'s layout:
        the first key varies slowest; a key's last slot holds NULL)."""
        g = np.arange(n_slots(fact_domains), dtype=np.int64)
        fact_slot = [(g // st) % (d.size + 1) for d, st in zip(fact_domains,
                                                               strides(fact_domains), strict=True)]
        out = np.zeros(len(g), np.int64)
        for m, od, ost in zip(self.key_maps, out_domains, strides(out_domains), strict=True):
            fs = fact_slot[m.fact_index]
            if not m.dim:
                out += fs * ost
                continue
            size = fact_domains[m.fact_index].size
            value = fact_domains[m.fact_index].base + fs  # a join key: an integer column
            o = np.full(len(g), od.size, np.int64)  # NULL: no dimension row, or a NULL key
            keys = np.asarray(m.dim_keys, np.int64)
            if len(keys):
                i = np.clip(np.searchsorted(keys, value), 0, len(keys) - 1)
                hit = (keys[i] == value) & (fs != size)
                o[hit] = np.asarray(m.slots, np.int64)[i[hit]]
            out += o * ost
        return out


# -- translation -------------------------------------------------------------------------
class JoinTranslator(Translator):
    """SQL -> IR where FROM may join registered dimension tables; their columns are IR
    columns named ``alias.column`` (``bind``, ``column``), taken apart by ``rewrite``."""

    def __init__(self, sql: str, catalog, dims: Mapping[str, Dimension]) -> None:
        super().__init__(sql, catalog)
        self.dims = dims
        self.joins: list[Joined] = []
        self.fact_cols: Mapping[str, ColumnMeta] = {}
        #: the IR name of a dimension column -> (alias, column)
        self.dim_cols: dict[str, tuple[str, str]] = {}
        self.dim_metas: dict[str, ColumnMeta] = {}
        #: the SQL text of translated expressions (EXPLAIN shows conditions as written)
        self.texts: dict[ir.Expr, str] = {}

    def _dim(self, name: str) -> Dimension | None:
        if name in self.dims:
            return self.dims[name]
        low = [d for n, d in self.dims.items() if n.lower() == name.lower()]
        return low[0] if len(low) == 1 else None

    def unknown_table(self, t: exp.Table) -> PlanError:
        if self._dim(t.name) is not None:
            return self.fail(f"the registered table {t.name!r} in FROM, which no store serves, "
                             f"{TREE_ONLY}", t)
        return super().unknown_table(t)

    def bind(self, s: exp.Select) -> None:
        self.fact_cols = self.cols
        for j in s.args.get("joins") or ():
            self.joins.append(self._join(j))
        if self.joins:
            self.cols = {**self.fact_cols, **self.dim_metas}

    def _join(self, j: exp.Join) -> Joined:
        side, kind, method = (str(j.args.get(k) or "").upper() for k in ("side", "kind", "method"))
        if method or kind in ("CROSS", "SEMI", "ANTI") or side in ("RIGHT", "FULL"):
            what = " ".join(w for w in (method, side, kind) if w)
            raise self.fail(f"{what} JOIN is not supported (bamql runs inner and left joins with "
                            "a dimension table on one key)", j)
        if j.args.get("using"):
            raise self.fail("JOIN ... USING is not supported: write ON fact.column = "
                            "alias.key", j)
        t = j.this
        if not isinstance(t, exp.Table) or not isinstance(t.this, exp.Identifier) or t.args.get("db"):
            raise self.fail("JOIN must name a registered dimension table", t)
        dim = self._dim(t.name)
        if dim is None:
            if t.name in self.catalog:
                raise self.fail(f"joins of two stored tables are not supported: {t.name!r} is "
                                "stored; the joined table must be a small registered dimension "
                                "table (Session.register)", t)
            known = ", ".join(sorted(self.dims)) or "none"
            raise self.fail(f"unknown dimension table {t.name!r} in JOIN (registered: {known})", t)
        alias = t.alias_or_name
        if alias.lower() in {x.alias.lower() for x in self.joins} | {self.qualifier.lower()}:
            raise self.fail(f"table alias {alias!r} is used twice", t)
        for c, meta in dim.metas.items():
            name = f"{alias}.{c}"
            self.dim_cols[name] = (alias, c)
            self.dim_metas[name] = ColumnMeta(name, meta.kind, meta.dtype, 0, 0, 1, meta.nulls,
                                              meta.min, meta.max, meta.dictionary,
                                              sql_type=meta.sql_type)
        on = j.args.get("on")
        if on is None:
            raise self.fail(f"JOIN {t.name} needs ON <fact column> = {alias}.<key>", j)
        while isinstance(on, exp.Paren):
            on = on.this
        if not isinstance(on, exp.EQ):
            what = "OR" if isinstance(on, exp.Or) else "AND" if isinstance(on, exp.And) else \
                type(on).__name__.upper()
            raise self.fail(f"JOIN ... ON {what} (not one equality <fact column> = "
                            f"{alias}.<key>) {TREE_ONLY}", on)
        sides = [x.this if isinstance(x, exp.Paren) else x for x in (on.this, on.expression)]
        if not all(isinstance(x, exp.Column) for x in sides):
            raise self.fail("JOIN ... ON must compare two columns", on)
        owner = [self._owner(x, alias, dim) for x in sides]
        if sorted(o[0] for o in owner) != ["dim", "fact"]:
            raise self.fail(f"JOIN ... ON must compare a column of {self.table!r} with a column "
                            f"of {alias!r}", on)
        fact_key = next(o[1] for o in owner if o[0] == "fact")
        dim_key = next(o[1] for o in owner if o[0] == "dim")
        fm, dm = self.fact_cols[fact_key], dim.metas[dim_key]
        if fm.kind != "int" or fm.scale or fm.sql_type is not None:
            what = fm.sql_type or f"{fm.kind} column"
            raise self.fail(f"a join key that is a {what} ({fact_key!r}) {TREE_ONLY}", on)
        if dm.kind != "int":
            raise self.fail(f"join key {alias}.{dim_key} is a {dm.kind} column; bamql joins on "
                            "an integer key", on)
        v, ok = dim.values[dim_key]
        if len(np.unique(v[ok])) != int(ok.sum()):
            raise self.fail(f"join key {alias}.{dim_key} is not unique in {t.name!r}; bamql "
                            "joins a dimension table on a unique key", on)
        if len(np.unique(v[ok])) > MAX_GROUPS:
            raise self.fail(f"dimension table {t.name!r} is too large to join", t)
        kind_ = JoinKind.LEFT if side == "LEFT" else JoinKind.INNER
        return Joined(alias, dim.name, kind_, fact_key, dim_key)

    def _owner(self, node: exp.Column, alias: str, dim: Dimension) -> tuple[str, str]:
        """('fact' or 'dim', column) of a column in this join's ON."""
        if node.table and node.table.lower() == alias.lower():
            c = dim.column(node.name)
            if c is None:
                raise self.fail(f"unknown column {node.name!r} in {alias!r}", node)
            return "dim", c
        if node.table and node.table != self.qualifier:
            raise self.fail(f"JOIN ... ON may name only {self.qualifier!r} and {alias!r}", node)
        if node.name in self.fact_cols:
            return "fact", node.name
        if not node.table and dim.column(node.name) is not None:
            return "dim", dim.column(node.name)
        raise self.fail(f"unknown column {node.name!r} in table {self.table!r}", node)

    def column(self, node: exp.Column) -> ir.Expr:
        if not self.joins:
            return super().column(node)
        q = node.table
        if q and q != self.qualifier:
            joined = [x for x in self.joins if x.alias.lower() == q.lower()]
            if not joined:
                raise self.fail(f"unknown table {q!r} in column {node.sql()}", node)
            return self._dim_col(joined[0], node)
        fact = next((c for c in self.fact_cols if c.lower() == node.name.lower()), None)
        if node.name in self.fact_cols or fact is not None:  # without regard to case
            fact = node.name if node.name in self.fact_cols else fact
            return column_value(fact, self.fact_cols[fact])
        if not q:
            owners = [x for x in self.joins if self.dims[x.table].column(node.name) is not None]
            if len(owners) > 1:
                raise self.fail(f"column {node.name!r} is ambiguous: qualify it with one of "
                                f"{', '.join(x.alias for x in owners)}", node)
            if owners:
                return self._dim_col(owners[0], node)
        close = difflib.get_close_matches(node.name, list(self.fact_cols), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise self.fail(f"unknown column {node.name!r} in table {self.table!r}{hint}", node)

    def _dim_col(self, j: Joined, node: exp.Column) -> ir.Col:
        c = self.dims[j.table].column(node.name)
        if c is None:
            raise self.fail(f"unknown column {node.name!r} in {j.alias!r} ({j.table}: "
                            f"{', '.join(self.dims[j.table].metas)})", node)
        name = f"{j.alias}.{c}"
        dec = self.dims[j.table].decimals.get(c)
        if dec is not None and dec[1]:
            raise self.fail(f"column {j.alias}.{c} of registered table {j.table!r} is {dec[0]} "
                            "and holds values of more than 15 significant digits, which a "
                            "join reads as doubles and would round; query the table alone "
                            "(exactly), or CAST the column to DOUBLE before registering it", node)
        return ir.Col(name, self.dim_metas[name].kind)

    def decimal_column(self, e: ir.Expr) -> str | None:
        found = super().decimal_column(e)
        if found is not None:
            return found
        for n in ir.walk(e):  # a dimension's DECIMAL, read as a double
            if isinstance(n, ir.Col) and n.name in self.dim_cols:
                alias, c = self.dim_cols[n.name]
                j = next(x for x in self.joins if x.alias == alias)
                if c in self.dims[j.table].decimals:
                    return n.name
        return None

    def expr(self, node) -> ir.Expr:
        e = super().expr(node)
        if self.joins and isinstance(node, exp.Expression):
            self.texts.setdefault(e, node.sql(dialect="duckdb"))
        return e

    def in_subquery(self, node: exp.In) -> ir.Expr:
        return in_subquery(self, node, self.dims)

    def query(self) -> ir.Query | ir.RowQuery | JoinQuery:
        q = super().query()
        if isinstance(q, ir.RowQuery):
            return rewrite_rows(q, self) if self.joins else q
        return rewrite(q, self) if self.joins else q


def rewrite_rows(q: ir.RowQuery, t: JoinTranslator) -> ir.RowQuery:
    """A row query over the fact table alone: the joins' conditions become conditions on
    the fact keys (as ``rewrite`` makes them); a joined table's columns may not be
    selected or ordered by."""
    dims = [c for c in q.columns if c in t.dim_cols]
    if dims:
        raise PlanError(f"a query that returns rows cannot select or order by a joined table's "
                        f"columns ({dims[0]}): name the fact table's columns")
    j = rewrite(ir.Query(q.table, q.predicate, (), (), (), (), None, (), None), t)
    return dataclasses.replace(q, predicate=j.fact.predicate, steps=j.steps)


def rewrite(q: ir.Query, t: JoinTranslator) -> JoinQuery:
    """The query over the fact table alone that answers ``q`` (see the module's text)."""
    alias_of = {name: alias for name, (alias, _) in t.dim_cols.items()}
    by_alias = {j.alias: j for j in t.joins}
    aggs = []
    for a in q.aggs:
        dims = [c for c in ir.columns_of(a) if c in alias_of]
        if dims and a.func in ir.QUANTILES:  # read again per row: the plan tree's
            raise PlanError(f"aggregates over dimension columns ({dims[0]}) are not supported "
                            "in MEDIAN and quantiles: GROUP BY the column instead")
        looked = _looked_up(a, t) if dims else a
        if looked is None:
            raise PlanError(f"aggregates over dimension columns ({dims[0]}) are not supported "
                            "for this column (a string, or a key range past "
                            f"{LOOKUP_SLOTS:,}): GROUP BY the column instead")
        aggs.append(looked)
    fact_terms: list[ir.Expr] = []
    terms: dict[str, list[ir.Expr]] = {j.alias: [] for j in t.joins}
    for c in ir.conjuncts(q.predicate):
        cols = ir.columns_of(c)
        aliases = {alias_of[x] for x in cols if x in alias_of}
        if not aliases:
            fact_terms.append(c)
        elif len(aliases) == 1 and all(x in alias_of for x in cols):
            terms[aliases.pop()].append(c)
        elif (looked := _looked_up(c, t)) is not None:
            fact_terms.append(looked)
        else:
            names = sorted(aliases) + ([t.qualifier] if len(aliases) == 1 else [])
            raise PlanError(f"a WHERE condition ({t.texts.get(c, show(c))}) mixes columns of "
                            f"{' and '.join(names)}: a condition that names a joined table's "
                            "string or DECIMAL column, or one whose keys span more than "
                            f"{LOOKUP_SLOTS:,}, may name only that table's columns")
    steps = []
    for j in t.joins:
        cond, step = _key_condition(j, terms[j.alias], t.dims[j.table], t.texts,
                                    t.fact_cols[j.fact_key])
        steps.append(step)
        if cond is not None:
            fact_terms.append(cond)
    pred = None if not fact_terms else fact_terms[0] if len(fact_terms) == 1 else ir.And(tuple(fact_terms))
    fact_keys: list[ir.Expr] = []
    maps: list[KeyMap] = []
    for k in q.keys:
        if isinstance(k, ir.Col) and k.name in alias_of:
            j = by_alias[alias_of[k.name]]
            fk = ir.Col(j.fact_key, "int")
        elif any(c in alias_of for c in ir.columns_of(k)):  # an expression over joined columns
            fk, j = _looked_up(k, t), None
            if fk is None:
                raise PlanError(f"GROUP BY {show(k)} names a joined table's string column, or "
                                f"one whose keys span more than {LOOKUP_SLOTS:,}: GROUP BY the "
                                "column itself")
        else:
            fk, j = k, None
        if fk not in fact_keys:
            fact_keys.append(fk)
        i = fact_keys.index(fk)
        maps.append(KeyMap(i) if j is None else _key_map(i, j, k, t))
    total = group_slots(fact_keys, t.fact_cols)
    if total is None:
        raise PlanError(f"GROUP BY {', '.join(show(k) for k in fact_keys)} with a JOIN is not "
                        "supported (only GROUP BY small-domain integer or string columns)")
    if total > MAX_GROUPS:
        keys = ", ".join(show(k) for k in fact_keys)
        raise PlanError(f"GROUP BY a joined column groups by the join keys ({keys}), up to "
                        f"{total:,} groups; bamql groups only small domains (at most {MAX_GROUPS:,})")
    names = tuple(f"key{i}" for i in range(len(fact_keys))) + tuple(f"agg{i}" for i in range(len(q.aggs)))
    refs = tuple(ir.KeyRef(i, k.kind) for i, k in enumerate(fact_keys)) + \
        tuple(ir.AggRef(i, a.kind) for i, a in enumerate(q.aggs))
    fact = ir.Query(q.table, pred, tuple(fact_keys), tuple(aggs), names, refs, None, (), None)
    return JoinQuery(fact, q, tuple(maps), dict(t.dim_metas), tuple(steps))


#: Most slots a joined column's lookup table takes (its dimension's range of keys): past it,
#: a condition that mixes the column with the fact table's, or an aggregate over it, is
#: refused
LOOKUP_SLOTS = 1 << 16


def _lookup(name: str, t: JoinTranslator) -> ir.Lookup | None:
    """Dimension column ``name`` as a lookup by its join's fact key (``ir.Lookup``); None
    for a column it does not look up (a string: its codes are its own dictionary's; a
    DECIMAL, which a dimension holds as doubles; or a range of keys past ``LOOKUP_SLOTS``)."""
    alias, c = t.dim_cols[name]
    kind = t.dim_metas[name].kind
    if kind not in ("int", "float"):
        return None
    j = next(x for x in t.joins if x.alias == alias)
    dim = t.dims[j.table]
    if c in dim.decimals:  # read as doubles here: beside an exact DECIMAL, not to be trusted
        return None
    kv, kok = dim.values[j.dim_key]
    keys = kv[kok].astype(np.int64)
    base = int(keys.min()) if len(keys) else 0
    size = int(keys.max()) - base + 1 if len(keys) else 0
    if size > LOOKUP_SLOTS:
        return None
    v, ok = dim.values[c]
    values = np.zeros(size, np.float64 if kind == "float" else np.int64)
    valid = np.zeros(size, bool)
    values[keys - base] = v[kok]
    valid[keys - base] = ok[kok]
    return ir.Lookup(ir.Col(j.fact_key, "int"), base, tuple(values.tolist()),
                     tuple(valid.tolist()), kind, label=name)


def _looked_up(e: ir.Expr, t: JoinTranslator) -> ir.Expr | None:
    """``e`` with each dimension column looked up by its fact key (``_lookup``); None where
    one is not."""
    refused = []

    def swap(x: ir.Expr) -> ir.Expr:
        if isinstance(x, ir.Col) and x.name in t.dim_cols:
            found = _lookup(x.name, t)
            if found is None:
                refused.append(x.name)
                return x
            return found
        return x

    out = ir.transform(e, swap)
    return None if refused else out


def _key_map(i: int, j: Joined, k: ir.Col, t: JoinTranslator) -> KeyMap:
    """Fact key ``i`` (``j``'s join key) -> the output slot of dimension column ``k``."""
    dim = t.dims[j.table]
    kv, kok = dim.values[j.dim_key]
    v, ok = dim.values[t.dim_cols[k.name][1]]
    d = key_domain(k, t.dim_metas)
    if d is None:  # a timestamp or a float: the plan tree groups it
        raise PlanError(f"GROUP BY {k.name}, a joined column, is an expression without a small "
                        "domain (the fused kernel groups a joined table's integers and strings)")
    slot = np.where(ok, v - d.base, d.size)
    order = np.argsort(kv[kok], kind="stable")
    return KeyMap(i, True, tuple(int(x) for x in kv[kok][order]),
                  tuple(int(x) for x in slot[kok][order]))


def _key_condition(j: Joined, terms: list[ir.Expr], dim: Dimension,
                   texts: Mapping[ir.Expr, str], fact: ColumnMeta) -> tuple[ir.Expr | None, str]:
    """The condition on the fact key that ``terms`` (on ``j``'s dimension columns) and the
    join kind become, and its EXPLAIN line. An inner join drops the fact rows whose key is
    NULL or has no dimension row: no condition where the fact column has no NULL and its
    whole range of values has dimension rows."""
    kv, kok = dim.values[j.dim_key]
    keys = np.unique(kv[kok])
    key = ir.Col(j.fact_key, "int")
    head = f"{j.kind.value} join {j.table} {j.alias} on {j.fact_key} = {j.alias}.{j.dim_key}"
    if not terms:
        if j.kind is JoinKind.LEFT:
            return None, f"{head}: every {j.fact_key} kept"
        if not fact.nulls and fact.min is not None and np.count_nonzero(
                (keys >= fact.min) & (keys <= fact.max)) == int(fact.max) - int(fact.min) + 1:
            return None, f"{head}: every {j.fact_key} ({fact.min}..{fact.max}) has a row"
        return _in(key, keys), f"{head}: {show(_in(key, keys))}"
    p = terms[0] if len(terms) == 1 else ir.And(tuple(terms))
    n = dim.rows + 1  # the dimension's rows and the all-NULL row an unmatched fact row sees
    env = {}
    for c in ir.columns_of(p):
        v, ok = dim.values[c.split(".", 1)[1]]
        env[c] = (np.append(v, v[:1] if len(v) else np.zeros(1, v.dtype)), np.append(ok, False))
    pv, pok = evaluate(p, env, n)
    passes = pv.astype(bool) & pok
    hit = np.unique(kv[kok & passes[:-1]])
    if j.kind is JoinKind.INNER or not passes[-1]:
        cond = _in(key, hit)
    else:  # unmatched rows (a NULL key, a key the dimension lacks) pass the condition
        rest = np.setdiff1d(keys, hit)
        cond = None if not len(rest) else ir.Or((ir.IsNull(key), _in(key, rest, negated=True)))
    where = " AND ".join(texts.get(x, show(x)) for x in terms)
    return cond, f"{head}: {where} -> {show(cond) if cond is not None else 'every row kept'}"


def _contiguous(values: np.ndarray) -> bool:
    """Whether sorted distinct integers are every integer from the first to the last."""
    return bool(len(values)) and int(values[-1]) - int(values[0]) + 1 == len(values)


def _in(key: ir.Col, values: np.ndarray, negated: bool = False) -> ir.Expr:
    """``key [NOT] IN (values)`` (sorted distinct integers); a run of three or more
    consecutive integers as a range, which zone maps prune and a kernel tests in two
    compares; no values: FALSE (or nothing to exclude)."""
    if not len(values) and not negated:
        return ir.Lit(False, "bool")
    if len(values) >= 3 and _contiguous(values):
        lo, hi = int(values[0]), int(values[-1])
        inside = ir.And((ir.Cmp(">=", key, ir.Lit(lo, "int")), ir.Cmp("<=", key, ir.Lit(hi, "int"))))
        return ir.Or((ir.Cmp("<", key, ir.Lit(lo, "int")), ir.Cmp(">", key, ir.Lit(hi, "int")))) \
            if negated else inside
    return ir.InList(key, tuple(ir.Lit(int(x), "int") for x in values), negated=negated)


def translate_joins(sql: str, catalog, dims: Mapping[str, Dimension]) -> ir.Query | JoinQuery:
    """Translate SQL whose FROM may join the dimension tables ``dims`` (name -> Dimension):
    a query without joins is what ``sql.translate.translate`` returns."""
    if not dims:
        return translate(sql, catalog)
    return translate(sql, catalog, translator=lambda s, c: JoinTranslator(s, c, dims))


__all__ = ["JoinKind", "JoinQuery", "translate_joins"]
