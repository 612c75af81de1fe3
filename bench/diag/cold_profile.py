"""Where a cold query's time goes on the GPU `file` backend: each query named runs with the
OS page cache dropped first (root), once untimed, then under cProfile; the top functions by
own time and the query's I/O statistics are printed.

    python bench/diag/cold_profile.py STORE_DIR q01 t03 ...   (STORE_DIR holds trips/)
"""

from __future__ import annotations

import cProfile
import io
import pstats
import subprocess
import sys
import time

import bamql
from bamql.queries import load


def drop() -> None:
    subprocess.run(["sync"], check=False)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def main() -> None:
    store, names = sys.argv[1], sys.argv[2:]
    con = bamql.connect(store, device="gpu", backend="file")
    for name in names:
        sql = load(name)
        drop()
        con.gpu.clear_cache()
        con.sql(sql)  # compiles; a cold plan
        drop()
        con.gpu.clear_cache()
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        res = con.sql(sql)
        prof.disable()
        wall = time.perf_counter() - t0
        st = res.stats
        print(f"## {name}: {wall * 1e3:.1f} ms; read {st.bytes_read / 2**20:.1f} MiB, kernel "
              f"{st.kernel_seconds * 1e3:.1f} ms, paths "
              f"{ {n: c.path for n, c in st.columns.items()} }")
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(14)
        print("\n".join(s.getvalue().splitlines()[4:26]))
        print(con.explain(sql)[-1500:])
    con.close()


if __name__ == "__main__":
    main()
