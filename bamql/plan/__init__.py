"""The relational plan: an immutable tree of logical nodes built from sqlglot's AST
(``plan.build``), rewritten by small pure rules (``plan.rules``) and run by one physical
operator per node kind (``plan.operators``). Subtrees that the fused scan-filter-aggregate
kernel runs whole become ``Fused`` leaves: the kernel stays the engine's core, chosen by a
rule."""
