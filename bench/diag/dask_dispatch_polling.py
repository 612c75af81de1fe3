"""Ways to wait for the workers' answers, with workers busy d ms (as a GPU query inline on
the worker's event loop), with and without a ``client.run`` just before each call (the
scale-out bench clears the GPU caches that way):

- ``client.sync``: the Client's event-loop thread sends and waits (what bamql does);
- ``loop``: a private event loop in the calling thread, with its own connection pool;
- ``spin``: that loop polled without sleeping until the answers are in;
- ``spin+yield``: the same, handing the GIL over (``time.sleep(0)``) on every pass.

Session 13 ran an earlier form (bamql's own ``_direct_call`` at commit 069928e, spin+yield
only, with ``client.run``): no gain over ``client.sync``. ``dask_round_trips_busy.py`` (no
``client.run``, spin without yield) had shown 0.7-0.8 against 1.2-1.4 ms. This script tells
the two changes apart.
"""

import asyncio
import statistics
import time

from distributed import Client, LocalCluster
from distributed.core import ConnectionPool


def add_handler(dask_worker=None):
    async def fake(blob=None):
        d = float(blob.decode())
        if d:
            time.sleep(d)
        return b"y" * 1100

    dask_worker.handlers["diag_busy"] = fake
    return True


def noop():
    return 0


async def _send(rpc, calls):
    return await asyncio.gather(*[rpc(w).diag_busy(blob=b) for w, b in calls])


async def _polled(pool, calls, give_gil):
    t = asyncio.ensure_future(_send(pool, calls))
    while not t.done():
        await asyncio.sleep(0)
        if give_gil:
            time.sleep(0)
    return t.result()


def bench(n):
    c = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                     silence_logs=40)
    cl = Client(c, direct_to_workers=True)
    cl.wait_for_workers(n)
    ws = sorted(cl.scheduler_info()["workers"])
    cl.run(add_handler)
    loop = asyncio.new_event_loop()
    pool = ConnectionPool(limit=64)
    loop.run_until_complete(pool.start())
    modes = {
        "client.sync": lambda calls: cl.sync(_send, cl.rpc, calls),
        "loop": lambda calls: loop.run_until_complete(_send(pool, calls)),
        "spin": lambda calls: loop.run_until_complete(_polled(pool, calls, False)),
        "spin+yield": lambda calls: loop.run_until_complete(_polled(pool, calls, True)),
    }
    for before in (False, True):
        for d in (0.0, 0.005, 0.010):
            calls = [(w, str(d).encode()) for w in ws]
            res = {}
            for name, f in modes.items():
                t = []
                for i in range(70):
                    if before:
                        cl.run(noop)
                    t0 = time.perf_counter()
                    f(calls)
                    if i >= 10:
                        t.append(time.perf_counter() - t0 - d)
                res[name] = round(statistics.median(t) * 1e3, 3)
            cells = "  ".join(f"{k} {v}" for k, v in res.items())
            print(f"workers={n} busy {d * 1e3:.0f} ms, client.run before: {before}: overhead ms  {cells}",
                  flush=True)
    loop.run_until_complete(pool.close())
    cl.close()
    c.close()


if __name__ == "__main__":
    for n in (1, 2):
        bench(n)
