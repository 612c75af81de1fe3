"""Where a repeated query's time goes on the client of a Dask session (issue 40).

Prepares ``--rows`` generated trips as ``--partitions`` partitions (reused when there), opens
a session on ``--cluster`` (``local-gpus[:N]`` or ``local-cpus:N``), runs each query
``--n`` times warm and prints the medians of the whole query, the client's wait for the
workers and the longest worker call, then cProfile's view of the client over another
``--n`` runs: its own time by function, the wait for the workers left out.

    python bench/diag/dask_client_profile.py --rows 20000000 --partitions 8 \\
        --cluster local-gpus:1 --device gpu --queries q01,t01
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--queries", default="q01,t01")
    ap.add_argument("--cluster", default="local-gpus:1")
    ap.add_argument("--device", default="gpu", choices=["gpu", "cpu"])
    ap.add_argument("--dispatch", default="actor", choices=["actor", "task"])
    ap.add_argument("--workdir", default="/tmp/bx-prof")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args(argv)

    import distributed

    from bamql.api.session import Session
    from bamql.bench.scaleout import prepare_partitions, query_columns
    from bamql.config import Config
    from bamql.queries import load

    queries = a.queries.split(",")
    _, d = prepare_partitions(Path(a.workdir), a.rows, 0.0005, 512, a.partitions,
                              query_columns(queries), say=lambda m: print(m, file=sys.stderr))
    if a.cluster.startswith("local-cpus:"):
        n = int(a.cluster.split(":")[1])
        cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1,
                                           dashboard_address=":0")
        client = distributed.Client(cluster, direct_to_workers=True)
    else:
        from bamql.exec.distributed import connect_cluster

        client = connect_cluster(a.cluster)
    config = Config.from_env(device=a.device, backend="host" if a.device == "gpu" else None,
                             cluster=client, dask_dispatch=a.dispatch)
    with Session(d, config=config) as con:
        for q in queries:
            sql = load(q)
            for _ in range(5):
                con.sql(sql).rows()
            wall, disp, work = [], [], []
            for _ in range(a.n):
                t0 = time.perf_counter()
                r = con.sql(sql)
                r.rows()
                wall.append(time.perf_counter() - t0)
                disp.append(r.stats.dispatch_seconds)
                work.append(max(r.stats.worker_seconds))
            print(f"{q}: query {statistics.median(wall) * 1e3:.2f} ms, the client's wait "
                  f"{statistics.median(disp) * 1e3:.2f} ms, the longest worker call "
                  f"{statistics.median(work) * 1e3:.2f} ms (medians of {a.n})")
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(a.n):
                con.sql(sql).rows()
            prof.disable()
            out = io.StringIO()
            st = pstats.Stats(prof, stream=out)
            st.sort_stats("tottime").print_stats(a.top)
            print("\n".join(ln for ln in out.getvalue().splitlines()
                            if "acquire" not in ln and ln.strip())[:6000])
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
