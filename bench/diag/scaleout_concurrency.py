"""Does a partition's engine slow down when another GPU works at the same time?

On one cluster of ``n`` workers (one per GPU) and a partitioned table, each query's
partitions run three ways, in turns, caches emptied before each: every worker alone (the
others idle), then all workers at once. Each partition's kernel and engine time are
compared: the same processes, the same memory, only the concurrency differs (the scale-out
bench's kernels take longer on two GPUs than on one: docs/measurements.md). The kernel's
time is split into the device's own (CUDA events around the launch) and the host's around
it (the accumulators' copies, the launch call, the wait): a slower device points at the
shared host memory and PCIe, a slower host side at the CPUs. ``--pin`` measures once more
with each worker bound to its own share of the CPUs and this process to the rest.
``--loads seq,rnd`` then runs worker 0's partitions once more while a process of this
script keeps the last GPU reading its own pinned host buffer (``host_read_latency``'s
load: a stream, or scattered pages) in place of the engine: if worker 0 slows as much as
beside the engine, the host traffic of any GPU is to blame; if not, something the engines
share.

Usage (GPU machine): ``python bench/diag/scaleout_concurrency.py TABLE_DIR [--gpus 2]
[--reps 9] [--queries q01,q03] [--device gpu|cpu] [--backend host] [--pin]
[--loads seq,rnd]``; ``--device cpu`` runs CPU workers (for trying it anywhere).
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics

import distributed

import bamql
from bamql import queries
from bamql.exec import distributed as dist
from bamql.exec.dask_worker import bamql_partitions, clear_caches


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("table_dir")
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--queries", default="q01,q03,q06")
    ap.add_argument("--device", default="gpu", choices=["gpu", "cpu"])
    ap.add_argument("--backend", default="host")
    ap.add_argument("--pin", action="store_true", help="measure again with the CPUs shared out")
    ap.add_argument("--loads", default="", help="synthetic loads on the last GPU beside worker 0: seq,rnd")
    ap.add_argument("--load-gib", type=float, default=14.0, help="the load's host buffer")
    a = ap.parse_args(argv)
    backend = a.backend if a.device == "gpu" else None
    with dist.local_gpu_cluster(a.gpus) as cluster, \
            distributed.Client(cluster, direct_to_workers=True) as client:
        client.wait_for_workers(a.gpus, timeout=120)
        workers = sorted(client.scheduler_info()["workers"])  # as DaskRunner deals them
        with bamql.connect(a.table_dir, device=a.device, backend=backend, cluster=client) as con:
            for setting in ("free", "pinned") if a.pin else ("free",):
                if setting == "pinned":
                    _pin(client, workers)
                for name in a.queries.split(","):
                    _measure(client, con, workers, name, a, setting)
            for load in filter(None, a.loads.split(",")):
                for name in a.queries.split(","):
                    _beside_load(client, con, workers, name, a, load)


def _pin(client, workers: list[str]) -> None:
    """Worker ``i`` on the ``i``-th share of the CPUs, this process on the last share."""
    cpus = sorted(os.sched_getaffinity(0))
    k = len(cpus) // (len(workers) + 1)
    for i, w in enumerate(workers):
        mine = set(cpus[i * k : (i + 1) * k])
        client.run(os.sched_setaffinity, 0, mine, workers=[w])
    os.sched_setaffinity(0, set(cpus[len(workers) * k :]))
    print(f"pinned: {len(workers)} workers on {k} CPUs each, this process on "
          f"{len(cpus) - len(workers) * k}", flush=True)


def _query_calls(con, workers: list[str], name: str) -> list[tuple[str, bytes]]:
    """Query ``name``'s calls, one per worker that holds partitions, as ``DaskRunner``
    deals them: partition ``i`` to worker ``i mod n``, the pickled ``(paths, arguments)``
    that ``dask_worker.bamql_partitions`` takes."""
    sql = queries.load(name)
    con.sql(sql)  # loads the partitions, compiles the kernel
    q = con._translate(sql)
    table, plan, runner = con.store(q.table), con.plan(q), con._dask
    args = (q, plan.key_domains, con._medium(), runner.device, runner.backend, runner.cache)
    share: list[list[str]] = [[] for _ in workers]
    for i, p in enumerate(table.paths):
        share[i % len(workers)].append(str(p))
    return [(w, pickle.dumps((ps, args), protocol=5))
            for w, ps in zip(workers, share, strict=True) if ps]


def _times(client, calls: list[tuple[str, bytes]], name: str) -> list[tuple[float, float, float]]:
    """Caches emptied, ``calls`` run at once (one task each, pinned to its worker): each
    partition's (kernel, device, engine) s."""
    client.run(clear_caches)
    futures = [client.submit(bamql_partitions, blob, workers=[w], allow_other_workers=False,
                             pure=False) for w, blob in calls]
    row = []
    for answer in client.gather(futures):
        status, out, *_ = pickle.loads(answer)
        if status != "ok":
            raise SystemExit(f"{name}: a worker failed: {out}")
        row += [(st.kernel_seconds, st.gpu_seconds, st.seconds) for st in out[1]]
    return row


def _medians(reps: list[list[tuple[float, float, float]]], k: int) -> list[float]:
    """Each partition's median of field ``k`` over the repetitions ``reps``."""
    return [statistics.median(r[j][k] for r in reps) for j in range(len(reps[0]))]


def _per_partition(reps: list[list[tuple[float, float, float]]], k: int) -> float:
    """The mean over partitions of each partition's median of field ``k``, in ms."""
    meds = _medians(reps, k)
    return sum(meds) / len(meds) * 1e3


def _beside_load(client, con, workers: list[str], name: str, a, load: str) -> None:
    """Worker 0's partitions alone, then while the last GPU reads host memory in ``load``."""
    import multiprocessing as mp
    import queue
    import threading
    import time

    from host_read_latency import _load  # this script's folder is on the path

    calls = _query_calls(con, workers, name)[:1]
    alone = [_times(client, calls, name) for _ in range(a.reps)]
    ctx = mp.get_context("spawn")
    ready, stop, out = ctx.Barrier(2), ctx.Event(), ctx.Queue()
    gpu = len(workers) - 1
    p = ctx.Process(target=_load, args=(gpu, load, a.load_gib, "driver", stop, ready, out))
    p.start()
    try:
        try:
            ready.wait(timeout=300)
        except threading.BrokenBarrierError:
            raise SystemExit(f"the {load} load on GPU {gpu} did not start (its error is above)") from None
        time.sleep(0.3)  # its reads under way
        loaded = [_times(client, calls, name) for _ in range(a.reps)]
        stop.set()
        try:
            _, gbs = out.get(timeout=60)
        except queue.Empty:
            raise SystemExit(f"the {load} load on GPU {gpu} failed (its error is above)") from None
    finally:
        stop.set()
        p.join(timeout=60)
        if p.is_alive():
            p.terminate()
    cells = []
    for label, k in (("kernel", 0), ("device", 1), ("engine", 2)):
        x, y = _per_partition(alone, k), _per_partition(loaded, k)
        pct = f"{(y / x - 1) * 100:+.1f}%" if x else "n/a"
        cells.append(f"{label} alone {x:.3f}, GPU {gpu} loaded {y:.3f} ({pct})")
    print(f"{name} [worker 0 beside GPU {gpu} {load} at {gbs:.1f} GB/s]: per partition, ms "
          f"(medians of {a.reps}): " + "; ".join(cells), flush=True)


def _measure(client, con, workers: list[str], name: str, a, setting: str) -> None:
    calls = _query_calls(con, workers, name)
    modes = {f"worker {i} alone": [c] for i, c in enumerate(calls)}
    modes["all at once"] = calls
    # per mode, per repetition: each partition's (kernel, device, engine) seconds
    got: dict[str, list[list[tuple[float, float, float]]]] = {m: [] for m in modes}
    for _ in range(a.reps):
        for m, cs in modes.items():
            got[m].append(_times(client, cs, name))

    def medians(mode: str, k: int) -> list[float]:
        return _medians(got[mode], k)

    def alone(k: int) -> list[float]:
        return [v for i in range(len(calls)) for v in medians(f"worker {i} alone", k)]

    def cell(label: str, k: int) -> str:
        one, both = alone(k), medians("all at once", k)
        pct = f"{(sum(both) / sum(one) - 1) * 100:+.1f}%" if sum(one) else "n/a"
        return (f"{label} alone {sum(one) / len(one) * 1e3:.3f}, "
                f"all at once {sum(both) / len(both) * 1e3:.3f} ({pct})")

    host = [(x - y) * 1e3 for x, y in zip(alone(0), alone(1), strict=True)]
    host_both = [(x - y) * 1e3 for x, y in zip(medians("all at once", 0),
                                                 medians("all at once", 1), strict=True)]
    print(f"{name} [{setting}]: per partition, ms (medians of {a.reps}): {cell('kernel', 0)}; "
          f"{cell('device', 1)}; host side of the kernel alone {sum(host) / len(host):.3f}, "
          f"at once {sum(host_both) / len(host_both):.3f}; {cell('engine', 2)}", flush=True)


if __name__ == "__main__":
    main()
