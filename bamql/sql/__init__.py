"""The SQL front end: parameters and file references bound on sqlglot's AST, and translation of a
statement into the fused kernels' IR (expressions, joins, subqueries, groupings, rows).
"""
