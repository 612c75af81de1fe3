"""Physical operators and their running: the fused kernels' CPU executor, the rows step, hash
aggregation, quantiles, the plan tree's leaves and runner, partitions and Dask workers, and
the results they assemble.
"""
