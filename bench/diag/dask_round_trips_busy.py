# ruff: noqa: B023  (the closures run within their own iteration)
"""Where a Dask round trip's time goes when the worker is busy: handler blocks d ms (as a
GPU query inline on the worker's loop). Client paths: the Client's loop thread
(client.sync) vs a private event loop in the calling thread with its own ConnectionPool."""

import asyncio
import statistics
import time

from distributed import Client, LocalCluster
from distributed.core import ConnectionPool


def add_handler(dask_worker=None):
    async def echo(blob=None, d=0.0):
        if d:
            time.sleep(d)
        return blob

    dask_worker.handlers["diag_echo"] = echo
    return True


def main():
    for n in (1, 2):
        c = LocalCluster(
            n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40
        )
        cl = Client(c, direct_to_workers=True)
        cl.wait_for_workers(n)
        ws = sorted(cl.scheduler_info()["workers"])
        cl.run(add_handler)
        req = b"x" * 600
        loop = asyncio.new_event_loop()
        pool = ConnectionPool(limit=64)

        async def start():
            await pool.start()

        loop.run_until_complete(start())

        async def via(rpcf, d):
            return await asyncio.gather(*[rpcf(w).diag_echo(blob=req, d=d) for w in ws])

        async def via_spin(rpcf, d):
            # poll the selector without sleeping until the answers are in (a busy client)
            t = asyncio.ensure_future(via(rpcf, d))
            while not t.done():
                await asyncio.sleep(0)
            return t.result()

        for d in (0.0, 0.002, 0.005, 0.010):
            res = {}
            for name in ("client.sync", "private-loop", "private-spin"):
                t = []
                for i in range(120):
                    t0 = time.perf_counter()
                    if name == "client.sync":
                        cl.sync(via, cl.rpc, d)
                    elif name == "private-loop":
                        loop.run_until_complete(via(pool, d))
                    else:
                        loop.run_until_complete(via_spin(pool, d))
                    if i >= 20:
                        t.append(time.perf_counter() - t0 - d)
                res[name] = round(statistics.median(t) * 1e3, 3)
            print(
                f"workers={n} handler blocks {d * 1e3:.0f} ms: overhead "
                + "  ".join(f"{k} {v} ms" for k, v in res.items()),
                flush=True,
            )
        loop.run_until_complete(pool.close())
        cl.close()
        c.close()


if __name__ == "__main__":
    main()
