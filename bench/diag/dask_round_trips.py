"""Dask round trips on this machine: actor coroutine call vs a plain worker handler
(client.rpc), 1 and 2 workers, worker profiler on and off. No data, no GPU work."""

import asyncio
import statistics
import time

import dask
from distributed import Client, LocalCluster


class Echo:
    async def run(self, blob):
        return blob


def add_handler(dask_worker=None):
    async def echo(comm=None, blob=None):
        return blob

    dask_worker.handlers["bamql_echo"] = echo
    return True


async def _gather(futs):
    return [await f for f in futs]


def bench(n, profile):
    with dask.config.set({"distributed.worker.profile.enabled": profile}):
        c = LocalCluster(
            n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40
        )
        cl = Client(c, direct_to_workers=True)
        cl.wait_for_workers(n)
        ws = sorted(cl.scheduler_info()["workers"])
        acts = [cl.submit(Echo, actor=True, workers=[w], pure=False).result() for w in ws]
        cl.run(add_handler)
        req = b"x" * 600
        m = lambda t: round(statistics.median(t) * 1e3, 3)

        def actor_once():
            return cl.sync(_gather, [a.run(req) for a in acts])

        async def rpc_all():
            return await asyncio.gather(*[cl.rpc(w).bamql_echo(blob=req) for w in ws])

        def rpc_once():
            return cl.sync(rpc_all)

        out = {}
        for name, f in (("actor", actor_once), ("rpc", rpc_once)):
            for _ in range(20):
                f()
            t = []
            for _ in range(200):
                t0 = time.perf_counter()
                f()
                t.append(time.perf_counter() - t0)
            out[name] = (m(t), round(min(t) * 1e3, 3))
        print(
            f"workers={n} profile={profile}: "
            + "  ".join(f"{k} median {v[0]} ms min {v[1]}" for k, v in out.items()),
            flush=True,
        )
        cl.close()
        c.close()


if __name__ == "__main__":
    for n in (1, 2):
        for p in (True, False):
            bench(n, p)
