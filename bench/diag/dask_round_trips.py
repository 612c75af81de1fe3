"""Dask round trips on this machine, and what they add to a partitioned table's queries.

1. No data, no work: one call to each of 2 idle worker processes, as a task
   (``Client.submit`` pinned to the worker, then ``gather``; with and without the
   ``wait`` that bamql's runner uses to watch for lost workers), an actor coroutine
   call, and a comm handler called through ``client.rpc`` (private API).
2. ``--data DIR`` (a directory holding a partitioned table ``trips``): a small query
   repeated through ``Session.sql`` with a LocalCluster of 2 single-threaded CPU worker
   processes: the query's wall time, and the client's wait for the workers beyond the
   longest worker call (``dispatch_seconds - max(worker_seconds)``: the round trip).
   Run it with each build on ``PYTHONPATH`` to compare them.

``--pace-ms P`` waits P ms (untimed) before each timed call: Dask batches the messages of
each connection (client to scheduler every 10 ms, scheduler to worker every 5 ms, worker
to scheduler every 2 ms), so calls back to back wait for those batches, and calls that
come as seldom as queries of a large table do not.

Prints medians of ``--reps`` calls, after 20 (part 1) or 30 (part 2) unmeasured ones.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import time

import distributed
from distributed import Client, LocalCluster

SQL = "SELECT AVG(trip_distance) FROM trips WHERE pickup_location_id IN (255, 256)"


class Echo:
    async def run(self, blob):
        return blob


def echo(blob):
    return blob


def add_handler(dask_worker=None):
    async def bamql_echo(comm=None, blob=None):
        return blob

    dask_worker.handlers["bamql_echo"] = bamql_echo
    return True


def _ms(t: list[float]) -> str:
    return f"median {statistics.median(t) * 1e3:.3f} ms min {min(t) * 1e3:.3f}"


PACE_S = 0.0


def _timed(f, reps: int, warm: int = 20) -> list[float]:
    for _ in range(warm):
        f()
    t = []
    for _ in range(reps):
        time.sleep(PACE_S)
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return t


def round_trips(cl: Client, reps: int) -> None:
    ws = sorted(cl.scheduler_info()["workers"])
    req = b"x" * 600
    acts = [cl.submit(Echo, actor=True, workers=[w], pure=False).result() for w in ws]
    cl.run(add_handler)

    def submit_gather():
        return cl.gather([cl.submit(echo, req, workers=[w], pure=False) for w in ws])

    def submit_wait_gather():
        fs = [cl.submit(echo, req, workers=[w], pure=False) for w in ws]
        distributed.wait(fs, timeout=1.0)
        return cl.gather(fs)

    async def _actors():
        return [await f for f in [a.run(req) for a in acts]]

    async def _rpc():
        return await asyncio.gather(*[cl.rpc(w).bamql_echo(blob=req) for w in ws])

    for name, f in (("submit+gather", submit_gather), ("submit+wait+gather", submit_wait_gather),
                    ("actor", lambda: cl.sync(_actors)), ("rpc handler (private)", lambda: cl.sync(_rpc))):
        print(f"  no-op to {len(ws)} workers, {name}: {_ms(_timed(f, reps))}", flush=True)


def queries(cl: Client, data: str, reps: int) -> None:
    import bamql

    with bamql.connect(data, device="cpu", cluster=cl) as con:
        for _ in range(30):
            con.sql(SQL)
        wall, trip = [], []
        for _ in range(reps):
            time.sleep(PACE_S)
            t0 = time.perf_counter()
            st = con.sql(SQL).stats
            wall.append(time.perf_counter() - t0)
            trip.append(st.dispatch_seconds - max(st.worker_seconds))
        print(f"  query ({con.store('trips').rows:,} rows, {len(con.store('trips').parts)} "
              f"partitions): wall {_ms(wall)}; client's wait beyond the longest worker call "
              f"{_ms(trip)}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="a directory with a partitioned table 'trips' (part 2)")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--build", default="?", help="what bamql is on PYTHONPATH (for the log)")
    ap.add_argument("--pace-ms", type=float, default=0.0, help="untimed wait before each call")
    ap.add_argument("--skip-round-trips", action="store_true")
    a = ap.parse_args()
    global PACE_S
    PACE_S = a.pace_ms / 1e3
    print(f"# machine: {platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"distributed {distributed.__version__}")
    print(f"# script: bench/diag/dask_round_trips.py --reps {a.reps} --pace-ms {a.pace_ms:g}"
          + (f" --data {a.data}" if a.data else ""))
    print(f"# build: {a.build}; load average {os.getloadavg()[0]:.2f} at the start", flush=True)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=40) as c, Client(c, direct_to_workers=True) as cl:
        cl.wait_for_workers(2)
        if not a.skip_round_trips:
            round_trips(cl, a.reps)
        if a.data:
            queries(cl, a.data, a.reps)


if __name__ == "__main__":
    main()
