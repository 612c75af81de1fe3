"""How long a one-shot ``bamql sql`` takes over a large store and over a CSV in place, with
the store's files and the kernel cache cold or warm (issue 39: "the first answer in a blink").

Every figure is the wall time of a new process, from its start to its exit (the median and
the fastest of ``--reps`` processes), with the median of its CPU time (user and system) and
its peak RSS. The cases:

* ``bamql sql STORE "SELECT COUNT(*), SUM(fare_amount) FROM trips WHERE trip_distance > 30"``
  over a store of ``--rows`` generated trips (the default device and ``--device cpu``), and
  a ``count(*)`` the table's metadata answers;
* ``bamql sql "SELECT ... FROM '<csv>' WHERE trip_distance > 30"`` over a CSV read in place
  (``--csv``, the 10,000-row TLC sample);

each in three states:

* ``warm``: the store's files in the OS page cache, the kernels in bamql's kernel cache;
* ``files cold``: the store's (or the CSV's) files dropped from the OS page cache before
  every process (``posix_fadvise(DONTNEED)`` on each file: no root needed, and no other
  file's pages are touched), the kernel cache warm;
* ``kernels cold``: a new ``BAMQL_CACHE_DIR`` and ``NUMBA_CACHE_DIR`` for every process (the
  key and the verified-store records of the warm one copied in, as in ``first_answer.py``),
  so that the query's kernels and bamql's compiled helpers are compiled; files warm.

``--tree LABEL=DIR`` (repeatable) compares source trees of bamql (``DIR`` first on
``PYTHONPATH``, e.g. ``git archive HEAD bamql | tar -x -C DIR`` of an earlier commit); the
trees take turns in each repetition, so that a shared VM's drifting load weighs on all
alike. Without it, the bamql this Python imports is measured. Processes run from a
temporary directory (``python -m`` puts the working directory first on ``sys.path``) with
Python's bytecode cache on, as an installed package has it. The imports of each warm case
(``python -X importtime``) close the report. Usage::

    python bench/diag/one_shot_latency.py [--rows 20000000] [--store DIR] [--reps 5]
        [--states "warm,files cold"] [--tree before=/tmp/base --tree after=.]

``--store`` reuses a table directory (else ``--rows`` trips are generated and ingested into
a temporary directory); ``--states`` measures only some of the states.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CSV = Path("/work/shared/data/tlc-sample/yellow_tripdata_sample_2019-01.csv")
HERE = Path(__file__).resolve().parent
FILTER = "SELECT COUNT(*), SUM(fare_amount) FROM {t} WHERE trip_distance > 30"
COUNT = "SELECT count(*) FROM {t}"
HEAVY = ("numba", "llvmlite", "sqlglot", "pandas", "pyarrow.csv", "pyarrow.dataset")

_WAITER = """import os, sys, time
t = time.perf_counter()
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY); os.dup2(fd, 1)
    os.execvpe(sys.argv[1], sys.argv[1:], os.environ)
_, status, ru = os.wait4(pid, 0)
dt = time.perf_counter() - t
print(dt, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, os.waitstatus_to_exitcode(status))
"""


def _timed(cmd: list[str], env: dict) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS MB) of ``cmd``, run through a small waiter whose
    own start is not counted: it forks, execs ``cmd`` and reports the child's rusage."""
    r = subprocess.run([sys.executable, "-c", _WAITER, *cmd], env=env, capture_output=True,
                       text=True)
    f = r.stdout.split()
    if r.returncode != 0 or len(f) != 4 or f[3] != "0":
        raise RuntimeError(f"{' '.join(cmd)} failed: {r.stdout[-500:]} {r.stderr[-2000:]}")
    return float(f[0]), float(f[1]), float(f[2])


def _drop(paths: list[Path]) -> None:
    """Drop the files under ``paths`` from the OS page cache (dirty pages are written first)."""
    for p in paths:
        for f in ([p] if p.is_file() else sorted(q for q in p.rglob("*") if q.is_file())):
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def _imports(cmd: list[str], env: dict) -> tuple[float, list[str]]:
    """(seconds of the top-level imports, the heavy packages imported) of ``cmd`` (a
    ``python -m bamql.cli ...`` command) under ``-X importtime``."""
    r = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], env=env, capture_output=True,
                       text=True)
    total, heavy = 0.0, set()
    for line in r.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if not m:
            continue
        if len(m.group(2)) == 1:
            total += int(m.group(1)) / 1e6
        name = m.group(3)
        for h in HEAVY:
            if (name == h or name.startswith(h + ".")) and int(m.group(1)) >= 1000:
                heavy.add(h)
    return total, sorted(heavy)


class Tree:
    """A source tree of bamql under test: its environment and warm cache directory."""

    def __init__(self, label: str, path: str | None, d: Path, base: dict) -> None:
        self.label, self.path, self.d = label, path, d
        self.base = dict(base)
        if path is not None:
            self.base["PYTHONPATH"] = os.pathsep.join(
                [str(Path(path).resolve()), *filter(None, [base.get("PYTHONPATH")])])
        self.warm_dir = d / f"warm-{label}"
        self.warm = {**self.base, "BAMQL_CACHE_DIR": str(self.warm_dir)}
        self._n = 0

    def env(self, state: str) -> dict:
        """The environment of one process in ``state``."""
        if state != "kernels cold":
            return self.warm
        self._n += 1
        new = self.d / f"cold-{self.label}-{self._n}"
        (new / "kernels").mkdir(mode=0o700, parents=True)
        key = self.warm_dir / "kernels" / ".hmac-key"
        if key.exists():
            shutil.copy2(key, new / "kernels" / key.name)
        if (self.warm_dir / "stores").is_dir():
            shutil.copytree(self.warm_dir / "stores", new / "stores")
        return {**self.base, "BAMQL_CACHE_DIR": str(new), "NUMBA_CACHE_DIR": str(new / "numba")}

    def commit(self) -> str:
        """The tree's commit where it is a git checkout, else its directory."""
        where = self.path or str(HERE)
        r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True, cwd=where)
        return r.stdout.strip() or where


def _make_store(d: Path, rows: int) -> Path:
    bamql = [sys.executable, "-m", "bamql.cli"]
    subprocess.run([*bamql, "gen", "--rows", str(rows), "--out", str(d / "orc"), "--files", "2"],
                   check=True, capture_output=True)
    subprocess.run([*bamql, "ingest", *map(str, sorted((d / "orc").glob("*.orc"))), "--out",
                    str(d / "data" / "trips")], check=True, capture_output=True)
    shutil.rmtree(d / "orc")
    return d / "data" / "trips"


def _row(label: str, runs: list[tuple[float, float, float]]) -> None:
    secs = [s for s, _, _ in runs]
    print(f"  {label:<52} {statistics.median(secs):6.2f} {min(secs):6.2f} "
          f"{statistics.median(c for _, c, _ in runs):6.2f} {max(r for *_, r in runs):7.0f}",
          flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--store", type=Path, default=None, help="a table directory to reuse")
    ap.add_argument("--csv", type=Path, default=CSV)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cold-reps", type=int, default=2,
                    help="processes per 'kernels cold' case (each compiles)")
    ap.add_argument("--tree", action="append", default=[], metavar="LABEL=DIR")
    ap.add_argument("--states", default="warm,files cold,kernels cold",
                    help="which states to measure, comma-separated")
    a = ap.parse_args(argv)
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="one-shot-") as tmp:
        d = Path(tmp)
        store = (a.store or _make_store(d, a.rows)).resolve()
        csv = a.csv.resolve()
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("BAMQL_", "NUMBA_")) and k != "PYTHONDONTWRITEBYTECODE"}
        trees = [Tree(*t.split("=", 1), d, base) for t in a.tree] or [Tree("this", None, d, base)]
        os.chdir(d)
        try:
            _matrix(a, store, csv, trees)
        finally:
            os.chdir(here)


def _matrix(a, store: Path, csv: Path, trees: list[Tree]) -> None:
    try:
        rows = f"{json.loads((store / 'manifest.json').read_text())['rows']:,} rows"
    except (OSError, ValueError, KeyError):
        rows = "a table"
    print(f"# bamql one-shot latency: {platform.node()}, {os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.2f}, python {platform.python_version()}; trees: "
          + ", ".join(f"{t.label} ({t.commit()})" for t in trees))
    print(f"# store {store} ({rows}); csv {csv}; reps {a.reps} (kernels cold {a.cold_reps}); "
          "wall seconds: median, fastest; CPU seconds: median; peak RSS MB")
    print(f"  {'case':<52} {'median':>6} {'best':>6} {'CPU':>6} {'RSS MB':>7}")
    py = [sys.executable, "-m", "bamql.cli", "sql"]
    cases = [  # (label, command, files to drop for 'files cold')
        ("store filter (default device)", [*py, str(store.parent), FILTER.format(t="trips")],
         [store]),
        ("store filter --device cpu", [*py, str(store.parent), FILTER.format(t="trips"),
                                       "--device", "cpu"], [store]),
        ("store count(*)", [*py, str(store.parent), COUNT.format(t="trips")], [store]),
        ("csv filter (in place)", [*py, FILTER.format(t=f"'{csv}'")], [csv]),
    ]
    for t in trees:  # fill each warm cache; a store opened first is verified and remembered
        for _, cmd, _ in cases:
            _timed(cmd, t.warm)
    tag = (lambda t: f" [{t.label}]") if len(trees) > 1 else (lambda t: "")
    for state in [x.strip() for x in a.states.split(",") if x.strip()]:
        print(f"{state}:")
        reps = a.cold_reps if state == "kernels cold" else a.reps
        for label, cmd, files in cases:
            runs: dict[str, list] = {t.label: [] for t in trees}
            for _ in range(reps):
                for t in trees:
                    if state == "files cold":
                        _drop(files)
                    runs[t.label].append(_timed(cmd, t.env(state)))
            for t in trees:
                _row(label + tag(t), runs[t.label])
    print("imports of each warm case (python -X importtime: top-level imports' seconds, heavy "
          "packages):")
    for label, cmd, _ in cases:
        for t in trees:
            secs, heavy = _imports(cmd, t.warm)
            print(f"  {label + tag(t):<52} {secs:6.2f}  {', '.join(heavy) or '-'}")
    print(f"# load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
