"""How long a new process takes for its first query on the CPU, with and without the
compiled code that earlier processes left on disk.

Three states, each in fresh processes on the same small table:

``cold``: nothing on disk (a new kernel directory and a new numba cache directory), so the
query's kernels and the page readers are compiled; ``no kernel dir``: the kernel directory
cannot be written, so the query's kernels are compiled in every process while the page
readers come from numba's cache (what every process paid before kernels were kept on
disk); ``warm``: both on disk, as a second run leaves them.

For each it prints the median (of ``--reps`` processes) of the first ``con.sql`` in the
process and of a one-shot ``bamql sql`` from start to exit. Usage:
``python bench/diag/first_query.py [--rows 200000] [--reps 3] [--query q06]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_FIRST = """
import time, bamql
from bamql.queries import load
with bamql.connect({data!r}, device="cpu") as con:
    t = time.perf_counter()
    con.sql(load({query!r}))
    print(time.perf_counter() - t)
"""


def _table(d: Path, rows: int) -> Path:
    from bamql.datasets.generator import GenParams
    from bamql.datasets.orc import generate_orc
    from bamql.storage.ingest import ingest

    r = generate_orc(d / "orc", GenParams(rows=rows, seed=5), workers=1)
    ingest(r.files, d / "data" / "trips", page_size=4096)
    return d / "data"


def _first(env: dict, data: Path, query: str) -> float:
    """The first query's seconds in a new process."""
    code = _FIRST.format(data=str(data), query=query)
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out.split()[-1])


def _shot(env: dict, data: Path, query: str) -> float:
    """A one-shot ``bamql sql``'s seconds, from start to exit."""
    from bamql.queries import load

    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bamql.cli", "sql", str(data), load(query),
                    "--device", "cpu"], env=env, check=True, capture_output=True)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--query", default="q06")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        data = _table(d, a.rows)
        blocked = d / "not-a-dir"
        blocked.write_text("")  # the kernel directory under a file cannot be made
        for state in ("cold", "no kernel dir", "warm"):
            firsts, shots = [], []
            for i in range(a.reps):
                env = dict(os.environ)
                if state == "cold":  # new, empty directories for every process
                    fresh = [{"BAMQL_CACHE_DIR": str(d / f"cold-{i}-{k}"),
                              "NUMBA_CACHE_DIR": str(d / f"cold-numba-{i}-{k}")} for k in (0, 1)]
                    firsts.append(_first({**env, **fresh[0]}, data, a.query))
                    shots.append(_shot({**env, **fresh[1]}, data, a.query))
                    continue
                env["BAMQL_CACHE_DIR"] = str(blocked if state == "no kernel dir" else d / "warm")
                env["NUMBA_CACHE_DIR"] = str(d / "numba")
                if i == 0:
                    _first(env, data, a.query)  # leaves what this state keeps on disk
                firsts.append(_first(env, data, a.query))
                shots.append(_shot(env, data, a.query))
            print(f"{state:<14} first query {statistics.median(firsts):.2f} s, one-shot bamql sql "
                  f"{statistics.median(shots):.2f} s (medians of {a.reps} processes)", flush=True)


if __name__ == "__main__":
    main()
