"""Every IR expression node is handled by every rendering, evaluation and code generation
that takes it: one registration per node kind, and none forgotten when a node is added."""

from __future__ import annotations

import inspect

from bamql.fused import evaluate, ir, show
from bamql.kernels.codegen import ExprCompiler

#: Nodes that only live over an aggregate's output, or that are the aggregates themselves:
#: kernels never see them.
AFTER_AGGREGATION = {ir.Agg, ir.KeyRef, ir.AggRef}


def _nodes() -> set[type]:
    return {c for _, c in inspect.getmembers(ir, inspect.isclass)
            if issubclass(c, ir.Expr) and c is not ir.Expr}


def test_every_node_is_shown():
    missing = {c.__name__ for c in _nodes() if c not in show.show.registry}
    assert not missing


def test_every_node_is_evaluated():
    missing = {c.__name__ for c in _nodes() - {ir.Agg} if c not in evaluate.evaluate.registry}
    assert not missing


def test_every_row_node_is_compiled():
    registry = ExprCompiler.__dict__["_node"].dispatcher.registry
    missing = {c.__name__ for c in _nodes() - AFTER_AGGREGATION if c not in registry}
    assert not missing


def test_an_unknown_node_is_named_in_the_error():
    class Strange(ir.Expr):
        kind = "int"

    for fn in (lambda e: show.show(e), lambda e: evaluate.evaluate(e, {}, 1),
               lambda e: ExprCompiler(lambda c: c, {}).compile(e)):
        try:
            fn(Strange())
        except TypeError as err:
            assert "Strange" in str(err)
        else:
            raise AssertionError("an unknown node was accepted")
