"""How long a one-shot command takes to its first answer, cold and warm (issue 39).

Every figure is the wall time of a new process from its start to its exit, the median (and
the fastest) of ``--reps`` processes, with the median of its CPU time (user and system: what
the load of other processes on a shared VM changes least; on an idle machine a one-shot's
wall time is about its CPU time, less where it runs threads) and its peak RSS:

* ``bamql sql`` over a store of ``--rows`` generated trips and over a CSV read in place
  (``--csv``, a 10,000-row TLC sample), for a query answered from the table's metadata
  (``count(*)``), a filtered aggregate and a GROUP BY; each with the kernel cache warm (a
  directory earlier runs filled), empty (``BAMQL_CACHE_DIR``, a new directory for every
  process holding only the key and the verified-store records of the warm one: the query's
  kernels are compiled) and cold (numba's cache of bamql's own compiled helpers empty too:
  ``NUMBA_CACHE_DIR``);
* the thin client: ``bamql sql --server grpc://...`` and ``bamql.connect("grpc://...")``
  against a warm ``bamql serve`` of the same store;
* DuckDB's Python one-shot, ``python -c "import duckdb; duckdb.sql(...)"``, on the same CSV
  and on a Parquet copy of the store's rows;
* where a warm one-shot's time goes, phase by phase inside the process;
* what each warm ``bamql sql`` imported (``python -X importtime``): the seconds of its
  imports and which of numba, sqlglot, pandas, pyarrow.flight came in.

``--tree LABEL=DIR`` (repeatable) compares source trees of bamql (``DIR`` first on
``PYTHONPATH``; e.g. a ``git worktree`` of an earlier commit): every case runs once per tree
in each repetition, the trees taking turns, so that the shared VM's drifting load weighs on
all alike. Without it, the bamql this Python imports is measured.

The processes run with Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` dropped from
their environment), as an installed package has it: a source tree that may not write its
``__pycache__`` compiles every module in every process, a fifth of a second more. Usage::

    python bench/diag/first_answer.py [--rows 1000000] [--reps 5] [--store DIR --parquet F]
        [--csv F] [--tree before=/tmp/base --tree after=.]

``--store`` reuses a table directory (else one is generated and ingested in a temporary
directory, with its source converted to Parquet for DuckDB).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CSV = Path("/work/shared/data/tlc-sample/yellow_tripdata_sample_2019-01.csv")
#: the command, as a module run (the same for every tree compared, whatever its entry point)
BAMQL = [sys.executable, "-m", "bamql.cli"]
HERE = Path(__file__).resolve().parent

#: (label, query over {t}): the table's metadata alone; a filtered aggregate (a kernel);
#: a GROUP BY (a kernel, groups, ORDER BY)
QUERIES = (
    ("count", "SELECT count(*) FROM {t}"),
    ("filter", "SELECT avg(trip_distance) FROM {t} WHERE passenger_count > 2"),
    ("group", "SELECT passenger_count, count(*) AS n, avg(fare_amount) AS f FROM {t} "
              "GROUP BY passenger_count ORDER BY passenger_count"),
)
HEAVY = ("numba", "sqlglot", "pandas", "llvmlite")


def _timed(cmd: list[str], env: dict) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS MB) of ``cmd`` run through a small waiter, whose
    own start is not counted: it forks, execs ``cmd`` and reports the child's rusage."""
    waiter = ("import os, sys, time\n"
              "t = time.perf_counter()\n"
              "pid = os.fork()\n"
              "if pid == 0:\n"
              "    fd = os.open(os.devnull, os.O_WRONLY); os.dup2(fd, 1)\n"
              "    os.execvpe(sys.argv[1], sys.argv[1:], os.environ)\n"
              "_, status, ru = os.wait4(pid, 0)\n"
              "dt = time.perf_counter() - t\n"
              "print(dt, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024,\n"
              "      os.waitstatus_to_exitcode(status))\n")
    r = subprocess.run([sys.executable, "-c", waiter, *cmd], env=env, capture_output=True,
                       text=True)
    fields = r.stdout.split()
    if r.returncode != 0 or len(fields) != 4 or fields[3] != "0":
        raise RuntimeError(f"{' '.join(cmd)} failed: {r.stderr[-2000:]}")
    return float(fields[0]), float(fields[1]), float(fields[2])


def _imports(cmd: list[str], env: dict) -> tuple[float, set[str]]:
    """(seconds of the top-level imports, the heavy packages imported) of ``cmd`` (a Python
    program: ``[python, ...]`` or the bamql script) run under ``-X importtime``."""
    script = cmd[0] if cmd[0] != sys.executable else None
    argv = [sys.executable, "-X", "importtime", *([script] if script else []), *cmd[1:]]
    r = subprocess.run(argv, env=env, capture_output=True, text=True)
    total, heavy = 0.0, set()
    for line in r.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if not m:
            continue
        if len(m.group(2)) == 1:  # a top-level import
            total += int(m.group(1)) / 1e6
        if int(m.group(1)) < 1000:  # a refused import (pandas, arrownp.without_pandas) is
            continue  # listed too, in microseconds
        if m.group(3).split(".")[0] in HEAVY or m.group(3) == "pyarrow.flight":
            heavy.add(m.group(3) if m.group(3) == "pyarrow.flight" else m.group(3).split(".")[0])
    return total, heavy


def _row(label: str, runs: list[tuple[float, float, float]]) -> None:
    secs = [s for s, _, _ in runs]
    cpu = statistics.median(c for _, c, _ in runs)
    rss = max(r for _, _, r in runs)
    print(f"  {label:<54} {statistics.median(secs):6.2f} {min(secs):6.2f} {cpu:6.2f} "
          f"{rss:7.0f}", flush=True)


def _emptied(warm: Path, new: Path) -> Path:
    """A cache directory without the warm one's kernels but with its key and its records of
    the stores it verified (``storage.seal``): the store seal's key is the kernel cache's, and
    a directory without it would verify a store in full at every open, which is not what an
    empty kernel cache costs here."""
    (new / "kernels").mkdir(mode=0o700, parents=True)
    key = warm / "kernels" / ".hmac-key"
    if key.exists():
        shutil.copy2(key, new / "kernels" / key.name)
    if (warm / "stores").is_dir():
        shutil.copytree(warm / "stores", new / "stores")
    return new


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _make_store(d: Path, rows: int) -> tuple[Path, Path]:
    """A table of ``rows`` generated trips and a Parquet copy of its rows."""
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    subprocess.run([*BAMQL, "gen", "--rows", str(rows), "--out", str(d / "orc"), "--files",
                    "1"], check=True, capture_output=True)
    src = sorted((d / "orc").glob("*.orc"))
    subprocess.run([*BAMQL, "ingest", *map(str, src), "--out", str(d / "data" / "trips")],
                   check=True, capture_output=True)
    pq.write_table(orc.read_table(src[0]), d / "trips.parquet")
    return d / "data" / "trips", d / "trips.parquet"


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
        if state == "warm":
            return self.warm
        self._n += 1
        new = self.d / f"{state}-{self.label}-{self._n}"
        e = {**self.base, "BAMQL_CACHE_DIR": str(_emptied(self.warm_dir, new))}
        if state == "cold":
            e["NUMBA_CACHE_DIR"] = str(self.d / f"numba-{self.label}-{self._n}")
        return e

    def commit(self) -> str:
        where = self.path or str(HERE)
        try:
            return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                  text=True, cwd=where).stdout.strip() or "?"
        except OSError:
            return "?"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cold-reps", type=int, default=3,
                    help="processes per empty/cold case (each compiles)")
    ap.add_argument("--store", type=Path, default=None, help="a table directory to reuse")
    ap.add_argument("--parquet", type=Path, default=None,
                    help="with --store: a Parquet file of the same rows, for DuckDB")
    ap.add_argument("--csv", type=Path, default=CSV)
    ap.add_argument("--tree", action="append", default=[], metavar="LABEL=DIR",
                    help="a source tree of bamql to measure (repeatable: compared)")
    a = ap.parse_args(argv)
    a.csv = a.csv.resolve()
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="first-answer-") as tmp:
        d = Path(tmp)
        store, parquet = a.store, a.parquet
        if store is None:
            store, parquet = _make_store(d, a.rows)
        store, parquet = store.resolve(), parquet.resolve() if parquet else None
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("BAMQL_", "NUMBA_")) and k != "PYTHONDONTWRITEBYTECODE"}
        trees = [Tree(*t.split("=", 1), d, base) for t in a.tree] or [Tree("this", None, d, base)]
        os.chdir(d)  # ``python -c`` puts the working directory first on sys.path: not a tree
        try:
            _matrix(a, d, store, parquet, trees, base)
        finally:
            os.chdir(here)


def _matrix(a, d: Path, store: Path, parquet: Path | None, trees: list[Tree], base: dict) -> None:
    print(f"# bamql first answers: {platform.node()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}, niceness {os.nice(0)}, python "
          f"{platform.python_version()}; trees: "
          + ", ".join(f"{t.label} ({t.commit()})" for t in trees))
    print(f"# store {store} ({_rows(store)}), csv {a.csv}; reps {a.reps} (empty/cold "
          f"{a.cold_reps}); wall seconds: median, fastest; CPU seconds: median; peak RSS MB")
    print(f"  {'case':<54} {'median':>6} {'best':>6} {'CPU':>6} {'RSS MB':>7}")
    csv = f"'{a.csv}'"
    cases = []
    for where, data, table in (("store", [str(store)], "trips"), ("csv", [], csv)):
        for label, q in QUERIES:
            cases.append((f"{where} {label}", [*BAMQL, "sql", *data, q.format(t=table)]))
    for t in trees:  # fill each warm cache (and the OS page cache); a store opened first
        for _, cmd in cases:  # is verified and remembered (storage.seal)
            _timed(cmd, t.warm)
    tag = (lambda t: f" [{t.label}]") if len(trees) > 1 else (lambda t: "")
    for state in ("warm", "empty", "cold"):
        print(f"bamql sql, kernel cache {state}:")
        reps = a.reps if state == "warm" else a.cold_reps
        for label, cmd in cases:
            runs = {t.label: [] for t in trees}
            for _ in range(reps):
                for t in trees:
                    runs[t.label].append(_timed(cmd, t.env(state)))
            for t in trees:
                _row(label + tag(t), runs[t.label])
    _server(a, store, trees, tag)
    _phases(a, store, trees, tag)
    print("DuckDB, python -c \"import duckdb; duckdb.sql(...).fetchall()\":")
    files = [("csv", f"read_csv_auto({csv})")]
    if parquet is not None:
        files.insert(0, ("parquet", f"'{parquet}'"))
    for where, table in files:
        for label, q in QUERIES:
            code = f"import duckdb; duckdb.sql({q.format(t=table)!r}).fetchall()"
            _timed([sys.executable, "-c", code], base)  # the OS page cache
            _row(f"{where} {label}", [_timed([sys.executable, "-c", code], base)
                                       for _ in range(a.reps)])
    print("imports of each warm bamql sql (python -X importtime: top-level imports' seconds, "
          "heavy packages):")
    for label, cmd in cases:
        for t in trees:
            secs, heavy = _imports(cmd, t.warm)
            print(f"  {label + tag(t):<54} {secs:6.2f}  {', '.join(sorted(heavy)) or '-'}")
    print(f"# load at the end {os.getloadavg()[0]:.2f}")


def _server(a, store: Path, trees: list[Tree], tag) -> None:
    """The thin client against a warm ``bamql serve`` of ``store`` (one per tree)."""
    servers = []
    try:
        for t in trees:
            port = _free_port()
            url = f"grpc://127.0.0.1:{port}"
            servers.append((t, url, subprocess.Popen(
                [*BAMQL, "serve", str(store), "--port", str(port)], env=t.warm,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)))
        for t, url, server in servers:
            probe = [*BAMQL, "sql", "--server", url, "SELECT count(*) FROM trips"]
            for _ in range(600):
                if subprocess.run(probe, env=t.warm, capture_output=True).returncode == 0:
                    break
                if server.poll() is not None:
                    raise RuntimeError(f"bamql serve exited: {server.stderr.read().decode()}")
                time.sleep(0.1)
        print("thin client against a warm bamql serve:")
        for label, q in QUERIES:
            sql = q.format(t="trips")
            for kind in ("bamql sql --server", "bamql.connect(grpc)"):
                runs = {t.label: [] for t in trees}
                cmds = {}
                for t, url, _ in servers:
                    code = f"import bamql; bamql.connect({url!r}).sql({sql!r}).fetchall()"
                    cmds[t.label] = ([*BAMQL, "sql", "--server", url, sql]
                                     if kind.startswith("bamql sql") else [sys.executable, "-c", code])
                    _timed(cmds[t.label], t.warm)  # the server's first run of the query
                for _ in range(a.reps):
                    for t in trees:
                        runs[t.label].append(_timed(cmds[t.label], t.warm))
                for t in trees:
                    _row(f"{kind}, {label}" + tag(t), runs[t.label])
                    if label == "count":
                        secs, heavy = _imports(cmds[t.label], t.warm)
                        print(f"    imports: {secs:.2f} s, {', '.join(sorted(heavy)) or '-'}")
    finally:
        for _, _, server in servers:
            server.terminate()
            server.wait(timeout=30)


_PHASES = """
import time
t0 = time.perf_counter()
import numpy, pyarrow
t1 = time.perf_counter()
import sqlglot
from sqlglot.dialects import duckdb
t2 = time.perf_counter()
import bamql, bamql.api.session
from bamql.cli.output import render
t3 = time.perf_counter()
import numba
t4 = time.perf_counter()
con = bamql.connect({data!r}, device="cpu")
t5 = time.perf_counter()
res = con.sql({query!r})
t6 = time.perf_counter()
render(res.table, "table")
t7 = time.perf_counter()
con.sql({query!r})
t8 = time.perf_counter()
con.close()
t9 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6, t8 - t7, t9 - t8)
"""
_PHASE_NAMES = ("numpy+pyarrow", "sqlglot+duckdb dialect", "bamql engine modules", "numba",
                "connect", "first query", "render", "same query again", "close")


def _phases(a, store: Path, trees: list[Tree], tag) -> None:
    """Where a warm one-shot's time goes: its phases timed inside the process (the fastest
    of ``--reps`` processes each), beside an empty interpreter's start and exit."""
    print("where a warm one-shot's time goes (seconds inside the process, fastest of the reps; "
          "numba imported apart, so 'first query' is its kernels' loads and the run):")
    empty = min(_timed([sys.executable, "-c", "pass"], trees[0].base)[0] for _ in range(a.reps))
    print(f"  python start and exit {empty:.3f}")
    csv = f"'{a.csv}'"
    for where, data, table in (("store", str(store), "trips"), ("csv", None, csv)):
        code = _PHASES.format(data=data, query=QUERIES[1][1].format(t=table))
        for t in trees:
            runs = []
            for _ in range(a.reps):
                r = subprocess.run([sys.executable, "-c", code], env=t.warm, capture_output=True,
                                   text=True)
                if r.returncode:  # a tree of another layout: its modules have other names
                    break
                runs.append([float(x) for x in r.stdout.split()[-len(_PHASE_NAMES):]])
            if not runs:
                print(f"  {where} filter{tag(t)}: not measured ({r.stderr.strip().splitlines()[-1]})")
                continue
            best = [min(col) for col in zip(*runs, strict=True)]
            print(f"  {where} filter{tag(t)}: " + ", ".join(
                f"{n} {v:.3f}" for n, v in zip(_PHASE_NAMES, best, strict=True)))


def _rows(store: Path) -> str:
    try:
        m = json.loads((store / "manifest.json").read_text())
        return f"{m.get('rows', '?'):,} rows"
    except (OSError, ValueError, TypeError):
        return "a table"


if __name__ == "__main__":
    main()
