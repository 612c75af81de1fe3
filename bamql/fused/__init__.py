"""The fused kernels' query record (IR), the value domains of its expressions, their evaluation
over NumPy arrays, and their text for EXPLAIN.
"""
