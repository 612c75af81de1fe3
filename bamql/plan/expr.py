"""SQL expressions over Arrow columns, with DuckDB's semantics: the evaluator of the
operators that run above a fused kernel (``plan.operators``).

An expression is a sqlglot node; a relation is a :class:`Rel` (an Arrow table and the
qualified name of each column). Values are Arrow arrays, or scalars that broadcast.

The evaluator and its leaves are ``plan.evaluator``'s; each family of functions registers
its handlers in a module of its own (``plan.fn_arith``, ``fn_logic``, ``fn_numbers``,
``fn_text``, ``fn_time``). This module imports them all, so an :class:`Evaluator` taken from
here knows every function.
"""

from __future__ import annotations

from bamql.plan import fn_time  # noqa: F401  (registers its handlers)
from bamql.plan.evaluator import (
                                  _HANDLERS,
                                  Evaluator,
                                  Rel,
                                  Value,
                                  _coerce,
                                  broadcast,
                                  find,
                                  is_number_type,
                                  resolve,
                                  truth,
)
from bamql.plan.fn_arith import unscaled_int
from bamql.plan.fn_logic import _common, in_array
from bamql.plan.fn_numbers import canonical
from bamql.plan.fn_text import const_int

__all__ = ["_HANDLERS", "Evaluator", "Rel", "Value", "_coerce", "_common", "broadcast", "canonical",
           "const_int", "find", "in_array", "is_number_type", "resolve", "truth", "unscaled_int"]
