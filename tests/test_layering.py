"""bamql's imports form layers without circles, in the order the data flows:

storage <- fused (the fused kernels' query record: IR, value domains, NumPy evaluation, text)
<- sql (the SQL front end: parameters, files, translation into IR) and physical (page access
plans, costs) <- kernels (generated CPU code, accumulators) <- gpu <- exec (physical
operators, runners, results) <- api (sessions, frames, DB-API, the thin client) <- server
(Flight SQL) <- cli <- bench; the relational plan (``plan``: nodes, rules, operators over
Arrow) sits under exec and above only the base; config, errors and lru, then the small
helpers, below them all.

Every ``import`` counts, function-level ones included: a circle hidden in a function still
ties two modules together.
"""

from __future__ import annotations

import ast
from pathlib import Path

import bamql

ROOT = Path(bamql.__file__).parent

#: Modules that import nothing of bamql but each other.
BASE = {"bamql.config", "bamql.errors", "bamql.lru"}
#: Small helpers every layer may use: they import only the base.
HELPERS = {"bamql.exactfloat", "bamql.intmath", "bamql.lazyjit", "bamql.lazynames", "bamql.likes",
           "bamql.parallel", "bamql.progress", "bamql.queries", "bamql.secretkey"}

#: What each layer may import (besides itself).
MAY_IMPORT = {
    "base": set(),
    "helpers": {"base"},
    "storage": {"base", "helpers"},
    "datasets": {"base", "helpers", "storage"},
    "fused": {"base", "helpers", "storage"},
    "sql": {"base", "helpers", "storage", "fused"},
    "physical": {"base", "helpers", "storage", "fused"},
    "kernels": {"base", "helpers", "storage", "fused"},
    "plan": {"base", "helpers"},
    "gpu": {"base", "helpers", "storage", "fused", "physical", "kernels"},
    "exec": {"base", "helpers", "storage", "fused", "sql", "physical", "kernels", "plan", "gpu"},
    "api": {"base", "helpers", "storage", "fused", "sql", "physical", "kernels", "plan", "gpu", "exec"},
    "server": {"base", "helpers", "storage", "sql", "exec", "api"},
    "cli": {"base", "helpers", "storage", "datasets", "fused", "sql", "exec", "api", "server", "bench"},
    "bench": {"base", "helpers", "storage", "datasets", "fused", "sql", "physical", "kernels", "exec",
              "api"},
    "top": {"base", "helpers", "api"},
}


def modules() -> dict[str, Path]:
    """Every module of bamql by dotted name (a package by its own name)."""
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's bamql imports, module-level and function-level. ``from a import b``
    counts as an import of ``a.b`` when that is a module, else of ``a``; a name that is no
    module is taken as its nearest enclosing module."""
    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {}
    for m, path in mods.items():
        pkg = m if path.name == "__init__.py" else m.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {resolve(a.name) for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                for a in node.names:
                    full = f"{base}.{a.name}"
                    found.add(full if full in mods else resolve(base))
        edges[m] = {n for n in found if n and n != m and n.split(".")[0] == "bamql"}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def layer(m: str) -> str:
    """The layer of module ``m``."""
    if m in BASE:
        return "base"
    if m in HELPERS:
        return "helpers"
    parts = m.split(".")
    if len(parts) > 1 and parts[1] in MAY_IMPORT:
        return parts[1]
    return "top"  # the package's entry (bamql)


def test_no_import_cycles():
    edges = imports(modules())
    found = cycles(edges)
    assert not found, "import circles: " + "; ".join(
        " <-> ".join(sorted(c)) for c in found)


def test_imports_go_down_the_layers():
    edges = imports(modules())
    wrong = []
    for m, targets in sorted(edges.items()):
        lm = layer(m)
        for t in sorted(targets):
            lt = layer(t)
            if lt == lm:
                continue
            if lt not in MAY_IMPORT[lm]:
                wrong.append(f"{m} -> {t}")
    assert not wrong, "imports against the layers: " + ", ".join(wrong)


def test_the_walk_sees_function_level_and_relative_imports(tmp_path):
    files = {"bamql.a": "def f():\n    from bamql.b import g\n",
             "bamql.b": "from . import c\n",
             "bamql.c": "import bamql.a.x\n"}
    mods = {}
    for name, text in files.items():
        mods[name] = tmp_path / f"{name}.py"
        mods[name].write_text(text)
    edges = imports(mods)
    assert edges == {"bamql.a": {"bamql.b"}, "bamql.b": {"bamql.c"}, "bamql.c": {"bamql.a"}}
    assert cycles(edges) == [{"bamql.a", "bamql.b", "bamql.c"}]
