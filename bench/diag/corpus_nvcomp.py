"""The differential corpus (``tests.sql.corpus``) with the GPU decompressing zstd copies on
the small tables of the corpus too: the ``nvcomp`` medium's fixed call time is taken as 0,
so the planner streams every column whose copy is smaller than its pages from the copy.

Not a test: a run on the GPU machine, its log committed under bench/results/correctness.
Usage: ``python bench/diag/corpus_nvcomp.py <tests.sql.corpus arguments>``.
"""

from __future__ import annotations

import runpy
import sys
from dataclasses import replace

from bamql.config import Medium
from bamql.planner import cost

if __name__ == "__main__":  # ingest's worker processes import this file again
    cost.MEDIA[Medium.NVCOMP] = replace(cost.NVCOMP, inflate_call_s=0.0)
    sys.argv = ["tests.sql.corpus", *sys.argv[1:]]
    runpy.run_module("tests.sql.corpus", run_name="__main__")
