"""What a worker's answer costs to pickle and unpickle: one accumulator set per partition
(bamql before session 14) against the partitions' sets merged on the worker (what
``dask_worker.bamql_partitions`` returns), on the same partition results, in one process.
Usage: ``python bench/diag/answer_pickling.py PARTITIONED_TABLE_DIR [query ...]``.
"""

from __future__ import annotations

import pickle
import sys
import time

import bamql
from bamql import queries
from bamql.config import Backend, Device
from bamql.exec.runner import LocalRunner
from bamql.kernels import accumulate


def _us(f, n: int = 500) -> float:
    f()
    t = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t) / n * 1e6


def main(path: str, names: list[str]) -> None:
    with bamql.connect(path, device="cpu") as con:
        for name in names:
            q = con._translate(queries.load(name))
            table = con.store(q.table)
            got = LocalRunner(Device.CPU, Backend.FILE).run(table, con.plan(q), con._medium())
            res = list(zip(got.accs, got.stats, strict=True))
            merged = accumulate.combine_all(got.accs)
            ways = {"per partition": ("ok", res, 0.1, (1.0, 2.0)),
                    "merged": ("ok", (merged, got.stats), 0.1, (1.0, 2.0))}
            cells = []
            for way, answer in ways.items():
                blob = pickle.dumps(answer, protocol=5)
                dumps = _us(lambda a=answer: pickle.dumps(a, protocol=5))
                loads = _us(lambda b=blob: pickle.loads(b))
                cells.append(f"{way}: {len(blob)} B, dumps {dumps:.0f} us, loads {loads:.0f} us")
            print(f"{name}, {len(res)} partitions: " + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or ["q01", "q06"])
