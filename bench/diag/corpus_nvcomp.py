"""The differential corpus (``tests.sql.corpus``) with the zstd copies streamed on the small
tables of the corpus too. By default the ``nvcomp`` medium's fixed call time is taken as 0, so
the planner streams every column whose copy is smaller than its pages from the copy and the
GPU decompresses it; with ``--host-inflate`` host decompression is taken as free instead, so
the same plans decompress on host threads (the file backend's path for a few chunks, which
a clustered plan's pruned reads take) while nvCOMP is installed.

Not a test: a run on the GPU machine, its log committed under bench/results/correctness.
Usage: ``python bench/diag/corpus_nvcomp.py [--host-inflate] <tests.sql.corpus arguments>``.
"""

from __future__ import annotations

import runpy
import sys
from dataclasses import replace

from bamql.config import Medium
from bamql.physical import cost

if __name__ == "__main__":  # ingest's worker processes import this file again
    args = sys.argv[1:]
    if args[:1] == ["--host-inflate"]:
        args = args[1:]
        cost.DECOMPRESS_BYTES_PER_S = 1e12
    else:
        cost.MEDIA[Medium.NVCOMP] = replace(cost.NVCOMP, inflate_call_s=0.0)
    sys.argv = ["tests.sql.corpus", *args]
    runpy.run_module("tests.sql.corpus", run_name="__main__")
