"""Does a partition's engine slow down when another GPU works at the same time?

On one cluster of ``n`` workers (one per GPU) and a partitioned table, each query's
partitions run three ways, in turns, caches emptied before each: every worker alone (the
others idle), then all workers at once. Each partition's kernel and engine time are
compared: the same processes, the same memory, only the concurrency differs. In the
scale-out bench each partition's kernel took 1-18% longer on two GPUs than on one, varying
from run to run (README, scale-out results).

Usage (GPU machine): ``python bench/diag/scaleout_concurrency.py TABLE_DIR [--gpus 2]
[--reps 9] [--queries q01,q03] [--device gpu|cpu] [--backend host]``; ``--device cpu``
runs CPU workers (for trying it anywhere).
"""

from __future__ import annotations

import argparse
import pickle
import statistics

import distributed

import bamql
from bamql import queries
from bamql.engine import distributed as dist


def _calls(workers: list[str], paths: list[str], args: tuple) -> list[tuple[str, bytes]]:
    share: list[list[str]] = [[] for _ in workers]
    for i, p in enumerate(paths):  # as the engine deals them: partition i on worker i mod n
        share[i % len(workers)].append(p)
    return [(w, pickle.dumps((ps, args), protocol=5)) for w, ps in zip(workers, share, strict=True)]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("table_dir")
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--queries", default="q01,q03,q06")
    ap.add_argument("--device", default="gpu", choices=["gpu", "cpu"])
    ap.add_argument("--backend", default="host")
    a = ap.parse_args(argv)
    backend = a.backend if a.device == "gpu" else None
    with dist.local_gpu_cluster(a.gpus) as cluster, \
            distributed.Client(cluster, direct_to_workers=True) as client:
        client.wait_for_workers(a.gpus, timeout=120)
        workers = list(dist._workers_for(client, fresh=True))
        with bamql.connect(a.table_dir, device=a.device, backend=backend, cluster=client) as con:
            for name in a.queries.split(","):
                sql = queries.load(name)
                con.sql(sql)  # loads the partitions, compiles the kernel
                q = con._translate(sql)
                store = con.store(q.table)
                args = (q, con._domains(q, store), con._medium(), a.device, backend, None)
                calls = _calls(workers, [str(p) for p in store.paths], args)
                modes = {f"worker {i} alone": [c] for i, c in enumerate(calls)}
                modes["all at once"] = calls
                kern: dict[str, list[list[float]]] = {m: [] for m in modes}
                eng: dict[str, list[list[float]]] = {m: [] for m in modes}
                for _ in range(a.reps):
                    for m, cs in modes.items():
                        client.run(dist.clear_caches)
                        ks, es = [], []
                        for answer in dist._answers(client, cs):
                            status, out, *_ = pickle.loads(answer)
                            if status != "ok":
                                raise SystemExit(f"{name}: a worker failed: {out}")
                            ks += [st.kernel_seconds for st in out[1]]
                            es += [st.seconds for st in out[1]]
                        kern[m].append(ks)
                        eng[m].append(es)
                # each partition's median over the repetitions, alone and at once
                alone_k = [statistics.median(r[j] for r in kern[f"worker {i} alone"])
                           for i in range(len(calls)) for j in range(len(kern[f"worker {i} alone"][0]))]
                alone_e = [statistics.median(r[j] for r in eng[f"worker {i} alone"])
                           for i in range(len(calls)) for j in range(len(eng[f"worker {i} alone"][0]))]
                both_k = [statistics.median(r[j] for r in kern["all at once"])
                          for j in range(len(kern["all at once"][0]))]
                both_e = [statistics.median(r[j] for r in eng["all at once"])
                          for j in range(len(eng["all at once"][0]))]
                def pct(both: list[float], alone: list[float]) -> str:
                    return f"{(sum(both) / sum(alone) - 1) * 100:+.1f}%" if sum(alone) else "n/a"

                def ms(v: list[float]) -> str:
                    return f"{sum(v) / len(v) * 1e3:.3f}"

                print(f"{name}: per partition, ms (medians of {a.reps}): kernel alone {ms(alone_k)}, "
                      f"all at once {ms(both_k)} ({pct(both_k, alone_k)}); engine alone "
                      f"{ms(alone_e)}, all at once {ms(both_e)} ({pct(both_e, alone_e)})", flush=True)


if __name__ == "__main__":
    main()
