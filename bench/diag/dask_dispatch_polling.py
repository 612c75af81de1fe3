"""(Runs against commit 069928e, where engine.distributed has _direct_call; reverted since.)
bamql's direct dispatch (private loop polling, engine.distributed._direct_call) against
the Client's event loop (client.sync), workers' handler busy d ms, a client.run before each
call as the scale-out bench does (it clears the GPU caches that way)."""

import statistics
import time

from distributed import Client, LocalCluster

from bamql.engine import distributed as dist


def add_handler(dask_worker=None):
    async def fake(blob=None):
        d = float(blob.decode())
        if d:
            time.sleep(d)
        return b"y" * 1100

    dask_worker.handlers["bamql_partitions"] = fake
    return True


def noop():
    return 0


if __name__ == "__main__":
    for n in (1, 2):
        c = LocalCluster(
            n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=40
        )
        cl = Client(c, direct_to_workers=True)
        cl.wait_for_workers(n)
        ws = sorted(cl.scheduler_info()["workers"])
        cl.run(add_handler)
        for d in (0.0, 0.005, 0.010):
            calls = [(w, str(d).encode()) for w in ws]
            res = {}
            for name in ("client.sync", "bamql-direct", "client.sync ", "bamql-direct "):
                t = []
                for i in range(60):
                    cl.run(noop)
                    t0 = time.perf_counter()
                    if name.strip() == "client.sync":
                        cl.sync(dist._through_client, cl, calls)
                    else:
                        dist._direct_call(cl, calls)
                    if i >= 10:
                        t.append(time.perf_counter() - t0 - d)
                res[name] = round(statistics.median(t) * 1e3, 3)
            print(
                f"workers={n} busy {d * 1e3:.0f} ms: overhead "
                + "  ".join(f"{k.strip()} {v}" for k, v in res.items()),
                flush=True,
            )
        cl.close()
        c.close()
