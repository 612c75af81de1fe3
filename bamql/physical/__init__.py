"""Physical planning of a fused query: predicate stages, pruning by zone maps and value sets,
access paths and their costs, page ranges.
"""
