"""Common table expressions inlined: ``WITH t AS (SELECT ... FROM trips WHERE ...)`` that
only filters and renames or computes columns of one table becomes part of the query that
reads it (its columns replaced by the CTE's expressions, its WHERE joined to the query's
by AND). Anything else in a CTE is refused with one line."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from bamql.errors import TREE_ONLY, PlanError

Fail = Callable[[str, exp.Expression], PlanError]

#: Clauses a CTE may not have: they change rows, not just filter them.
_CLAUSES = (("group", "GROUP BY"), ("having", "HAVING"), ("order", "ORDER BY"),
            ("limit", "LIMIT"), ("offset", "OFFSET"), ("distinct", "DISTINCT"),
            ("windows", "WINDOW"), ("qualify", "QUALIFY"), ("joins", "JOIN"),
            ("with_", "WITH"))


def inline_ctes(s: exp.Select, fail: Fail) -> exp.Select:
    """``s`` with its CTEs inlined into the query (and into later CTEs) that read them."""
    w = s.args.get("with_")
    if w is None:
        return s
    if w.args.get("recursive"):
        raise fail(f"WITH RECURSIVE {TREE_ONLY}", w)
    s = s.copy()
    ctes = list(s.args["with_"].expressions)
    s.set("with_", None)
    bodies: dict[str, exp.Select] = {}
    for cte in ctes:
        body = cte.this
        _check(body, cte, fail)
        bodies[cte.alias_or_name] = _inline(body, bodies, fail)
    return _inline(s, bodies, fail)


def _check(body: exp.Expression, cte: exp.CTE, fail: Fail) -> None:
    what = ("a CTE must filter or project one table (SELECT expressions FROM table WHERE "
            "condition)")
    if not isinstance(body, exp.Select):
        raise fail(f"{what}, not {body.key.upper()}", body)
    for arg, name in _CLAUSES:
        if body.args.get(arg):
            node = body.args[arg]
            node = node[0] if isinstance(node, list) else node
            raise fail(f"{what}: {name} in a CTE is not supported",
                       node if isinstance(node, exp.Expression) else body)
    frm = body.args.get("from_")
    if frm is None or not isinstance(frm.this, exp.Table) or not isinstance(frm.this.this, exp.Identifier):
        raise fail(f"{what}: its FROM must name one table", cte)
    for item in body.expressions:
        for n in item.walk():
            if isinstance(n, exp.AggFunc | exp.Window | exp.Subquery | exp.Select) and n is not body:
                raise fail(f"{what}: {n.key.upper()} in a CTE is not supported", n)
    if cte.args.get("alias") is not None and cte.args["alias"].columns:
        raise fail("column names after a CTE's name are not supported; alias its columns", cte)


def _outputs(body: exp.Select) -> tuple[dict[str, exp.Expression], bool]:
    """The CTE's output columns (name -> expression, table qualifiers dropped) and whether it
    passes every column of its table through (``*``)."""
    out, star = {}, False
    for item in body.expressions:
        if isinstance(item, exp.Star):
            star = True
            continue
        e = item.unalias() if isinstance(item, exp.Alias) else item
        e = e.copy()
        for c in e.find_all(exp.Column):
            c.set("table", None)
        out[item.alias_or_name] = e
    return out, star


def _inline(s: exp.Select, bodies: dict[str, exp.Select], fail: Fail) -> exp.Select:
    """``s`` with a FROM that names one of ``bodies`` read from the CTE's table instead."""
    frm = s.args.get("from_")
    if frm is None or not isinstance(frm.this, exp.Table) or frm.this.name not in bodies \
            or frm.this.args.get("db"):
        return s
    t = frm.this
    if s.args.get("joins"):
        raise fail("a JOIN of a CTE is not supported; join the table itself", s.args["joins"][0])
    body = bodies[t.name]
    outs, star = _outputs(body)
    for item in s.expressions:  # * over a CTE that computes or drops columns: its own list
        if (isinstance(item, exp.Star) or (isinstance(item, exp.Column)
                                           and isinstance(item.this, exp.Star))) and (outs or not star):
            raise fail(f"SELECT * over a CTE that names its columns {TREE_ONLY}", item)
    qualifier = t.alias_or_name
    aliases = {i.alias for i in s.expressions if isinstance(i, exp.Alias)}
    s = s.copy()
    for item in list(s.expressions):  # an output keeps the name it has over the CTE
        if not isinstance(item, exp.Alias | exp.Star) and any(
                c.name in outs for c in item.find_all(exp.Column)):
            name = item.name if isinstance(item, exp.Column) else item.sql(dialect="duckdb")
            item.replace(exp.alias_(item.copy(), name, quoted=True))
    for c in list(s.find_all(exp.Column)):
        if c.table and c.table != qualifier:
            continue  # the translator names the unknown table
        if c.name in outs:
            new = outs[c.name].copy()
            c.replace(new if isinstance(new, exp.Column | exp.Literal) else exp.paren(new))
        elif c.table:
            if not star:
                raise fail(f"column {c.name!r} is not in CTE {t.name!r}", c)
            c.set("table", None)
        elif not star and c.name not in aliases:
            raise fail(f"column {c.name!r} is not in CTE {t.name!r}", c)
    src = body.args["from_"].this.copy()  # the table, under the name the query reads it by
    src.set("alias", exp.TableAlias(this=exp.to_identifier(qualifier)) if t.alias else None)
    s.set("from_", exp.From(this=src))
    if body.args.get("where") is not None:
        cond = body.args["where"].this.copy()
        own = {x.lower() for x in (body.args["from_"].this.name,
                                   body.args["from_"].this.alias_or_name)}
        for c in list(cond.find_all(exp.Column)):
            if not _nested(c, cond):
                c.set("table", None)
            elif c.table and c.table.lower() in own:  # a subquery that reads the CTE's row
                raise fail(f"a correlated subquery in a CTE {TREE_ONLY}", c)
        w = s.args.get("where")
        both = cond if w is None else exp.and_(exp.paren(cond), exp.paren(w.this))
        s.set("where", exp.Where(this=both))
    return s


def _nested(c: exp.Expression, top: exp.Expression) -> bool:
    """Whether ``c`` lies in a subquery of ``top`` (its names are the subquery's own)."""
    p = c.parent
    while p is not None and p is not top:
        if isinstance(p, exp.Select | exp.Subquery):
            return True
        p = p.parent
    return False
