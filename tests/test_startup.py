"""Start-up: ``import bamql`` and the CLI's parser load no heavy package, a one-shot CPU query
loads none it does not use, and the names that load on first use are the engine's own."""

from __future__ import annotations

import json
import subprocess
import sys

import duckdb
import numpy as np
import pytest

import bamql
from bamql.lazyjit import LazyJit, njit, prange
from tests.conftest import SAMPLES

#: packages that take a tenth of a second or more to import (or pull in one that does)
HEAVY = {"numpy", "numba", "pyarrow", "pandas", "sqlglot", "rich", "duckdb", "dask", "llvmlite"}


def loaded(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code`` (its stdout is dropped)."""
    probe = ("import io, contextlib, json, sys\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             + "".join(f"    {line}\n" for line in code.splitlines())
             + "print(json.dumps(sorted(sys.modules)))\n")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return set(json.loads(r.stdout.splitlines()[-1]))


def heavy(mods: set[str]) -> set[str]:
    return {m for m in mods if m.split(".")[0] in HEAVY}


def test_import_bamql_loads_no_heavy_package():
    assert heavy(loaded("import bamql")) == set()


def test_the_cli_parser_loads_no_heavy_package():
    mods = loaded("import bamql.cli.main\nbamql.cli.main.build_parser().parse_args(['sql', 'SELECT 1'])")
    assert heavy(mods) == set()
    assert "bamql.api.session" not in mods and "bamql.server.flight" not in mods


def test_lazy_names_are_the_engines_own():
    from bamql import Session, col, connect, count
    from bamql.api import connection, frame, session
    assert (Session, connect) == (session.Session, connection.connect)
    assert bamql.api.connect is connect
    assert (col, count) == (frame.col, frame.count)
    assert (bamql.api.Session, bamql.api.col) == (Session, col)
    assert set(bamql.__all__) <= set(dir(bamql))
    assert bamql.sql.__name__ == "bamql.sql"  # a subpackage, as after its import
    for module in (bamql, bamql.api):
        with pytest.raises(AttributeError, match="no attribute 'nope'"):
            module.nope  # noqa: B018


def test_a_cpu_query_over_a_store_loads_only_what_it_uses(sample_store):
    where = "passenger_count > 2 AND fare_amount < 10"
    query = f"SELECT count(*) FROM trips WHERE {where}"
    mods = loaded("from bamql.cli.main import main\n"
                  f"assert main(['sql', '--device', 'cpu', '--format', 'csv', {str(sample_store)!r}, "
                  f"{query!r}]) == 0\n")
    # the query ran: numba's kernels, pyarrow's result and sqlglot's parse are there ...
    assert {"numba", "pyarrow", "sqlglot"} <= mods
    # ... but nothing of the GPU, files in place, progress bars or the server, nor pandas
    # (which pyarrow's conversions between NumPy and Arrow would load: storage.arrownp)
    for m in ("numba.cuda", "pyarrow.dataset", "pyarrow.flight", "rich", "bamql.server.flight",
              "pandas"):
        assert m not in mods, m


def test_a_cpu_query_over_a_store_answers_as_duckdb(sample_store, capsys):
    from bamql.cli.main import main

    where = "passenger_count > 2 AND fare_amount < 10"
    select = "count(*) AS n, sum(passenger_count) AS p, max(fare_amount) AS f"
    assert main(["sql", "--device", "cpu", "--format", "json", str(sample_store),
                 f"SELECT {select} FROM trips WHERE {where}"]) == 0
    got = json.loads(capsys.readouterr().out)
    files = ", ".join(f"'{p}'" for p in SAMPLES)
    (n, p, f), = duckdb.sql(f"SELECT {select} FROM read_csv_auto([{files}]) WHERE {where}").fetchall()
    assert got == [{"n": n, "p": p, "f": f}] and n > 0


#: what compiles or runs kernels: numba and its LLVM binding
KERNELS = {"numba", "llvmlite"}


def test_a_count_over_a_store_loads_no_kernel_and_no_pandas(sample_store):
    # COUNT(*) and COUNT(column) of a whole table come from its metadata: no kernel runs
    mods = loaded("from bamql.cli.main import main\n"
                  f"assert main(['sql', {str(sample_store)!r}, "
                  "'SELECT count(*), count(congestion_surcharge) FROM trips']) == 0\n")
    assert {"pyarrow", "sqlglot"} <= mods
    assert {m.split(".")[0] for m in mods} & (KERNELS | {"pandas"}) == set()
    for m in ("bamql.plan.build", "bamql.plan.rules", "bamql.plan.operators",
              "bamql.exec.fileplan", "bamql.storage.inplace",
              "bamql.storage.ingest", "bamql.storage.nativeio", "pyarrow.parquet"):
        assert m not in mods, m


def test_storage_and_the_session_import_without_numba():
    mods = loaded("import bamql.api.session, bamql.storage.store, bamql.storage.writer\n"
                  "import bamql.physical.ranges, bamql.exec.leaves")
    assert {m.split(".")[0] for m in mods} & KERNELS == set()


def test_a_count_from_metadata_answers_as_duckdb(sample_store):
    files = ", ".join(f"'{p}'" for p in SAMPLES)
    select = "count(*) AS n, count(congestion_surcharge) AS c, count(fare_amount) AS f"
    with bamql.connect(sample_store, device="cpu") as con:
        res = con.sql(f"SELECT {select} FROM trips")
        assert "answered from the table's metadata" in con.explain(f"SELECT {select} FROM trips")
        want = duckdb.sql(f"SELECT {select} FROM read_csv_auto([{files}])").fetchall()
        assert res.rows() == want and 0 < want[0][1] < want[0][0]
        assert res.stats.bytes_read == 0 and res.stats.rows == want[0][0]
        # ... and as the kernel counts, which a WHERE that keeps every row sends there
        kept = con.sql(f"SELECT {select} FROM trips WHERE fare_amount IS NULL "
                       "OR fare_amount IS NOT NULL")
        assert kept.rows() == want and kept.stats.bytes_read > 0
        # expressions over the counts, HAVING and LIMIT still apply
        assert con.sql("SELECT count(*) * 2 + 1 FROM trips").rows() == [(2 * want[0][0] + 1,)]
        assert con.sql("SELECT count(*) FROM trips HAVING count(*) > 1e9").rows() == []


@njit(nogil=True)
def _total(a):  # compiled on its first call (bamql.lazyjit), prange as numba's
    s = 0
    for i in prange(a.shape[0]):
        s += a[i]
    return s


def test_compiled_helpers_compile_on_first_call():
    from bamql.storage import pagemath

    # a module's helpers are compiled once called; a helper they call is compiled with them
    pages = np.arange(4 * 512, dtype=np.uint8).reshape(4, 512)
    ids = np.arange(4, dtype=np.int64)
    words = pages.view(np.uint64)
    with np.errstate(over="ignore"):  # the hash's products wrap, as compiled
        want = np.array([pagemath.page_hash.py_func(words[i], ids[i]) for i in range(4)])
    assert (pagemath.page_checksums(pages, ids) == want).all()
    assert isinstance(_total, LazyJit)
    assert _total(np.arange(10)) == 45 and "(compiled)" in repr(_total)
    assert _total.py_func(np.arange(10)) == 45 and _total.signatures


#: what a client of a bamql server must not load: the engine's compiler, parser and planner
ENGINE = {"numba", "llvmlite", "sqlglot", "pandas"}


def test_the_thin_client_imports_flight_and_the_result_types_only():
    mods = loaded("import bamql\nbamql.connect\nimport bamql.api.remote_session")
    assert "pyarrow.flight" in mods
    assert {m.split(".")[0] for m in mods} & ENGINE == set()
    ours = {m for m in mods if m.startswith("bamql.")}
    assert ours <= {"bamql.errors", "bamql.config", "bamql.lazynames", "bamql.api",
                    "bamql.api.connection", "bamql.api.remote_session", "bamql.api.wire",
                    "bamql.exec", "bamql.exec.resultset",  # the package's docstring alone
                    "bamql.storage", "bamql.storage.iostats"}, ours  # its names load lazily


def test_sql_with_a_server_loads_no_engine(sample_store, tmp_path):
    import os
    import socket
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"grpc://127.0.0.1:{port}"
    env = dict(os.environ, BAMQL_CACHE_DIR=str(tmp_path))
    server = subprocess.Popen([sys.executable, "-m", "bamql.cli", "serve", str(sample_store),
                               "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        query = "SELECT count(*) AS n, max(fare_amount) AS f FROM trips"
        # as the command runs: main() with its own argv
        code = ("import sys\nfrom bamql.cli.main import main\n"
                f"sys.argv = ['bamql', 'sql', '--server', {url!r}, {query!r}, '--format', 'csv']\n"
                "assert main() == 0\n")
        for _ in range(300):  # until the server answers
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               env=env, timeout=120)
            if r.returncode == 0 or server.poll() is not None:
                break
            time.sleep(0.1)
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[:1] == ['"n","f"'] and r.stdout.splitlines()[1].startswith("20000,")
        mods = loaded(code)
        assert "pyarrow.flight" in mods
        assert {m.split(".")[0] for m in mods} & ENGINE == set()
        assert "bamql.api.session" not in mods and "bamql.exec.result" not in mods
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_bamql_sql_over_a_csv_loads_no_pandas():
    # pyarrow would import pandas to look for pandas objects among the values it converts;
    # the command holds none (arrownp.without_pandas)
    csv = SAMPLES[0]
    code = ("import sys\nfrom bamql.cli.main import main\n"
            f"sys.argv = ['bamql', 'sql', \"SELECT avg(trip_distance) FROM '{csv}' "
            "WHERE passenger_count > 2\"]\nassert main() == 0\n")
    mods = loaded(code)
    assert "pandas" not in mods and {"numba", "pyarrow.csv"} <= mods


def test_the_version_is_looked_up_only_when_asked(monkeypatch, capsys):
    import bamql.cli.main

    def looked_up():
        raise AssertionError("the version was looked up")

    monkeypatch.setattr(bamql.cli.main, "_version", looked_up)
    bamql.cli.main.build_parser().parse_args(["sql", "SELECT 1"])
    monkeypatch.setattr(bamql.cli.main, "_version", lambda: "9.9")
    with pytest.raises(SystemExit) as e:
        bamql.cli.main.build_parser().parse_args(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out == "bamql 9.9\n"


def test_cached_kernels_load_without_numbas_registries_and_compiling_still_works(sample_store,
                                                                                 tmp_path):
    import os

    files = ", ".join(f"'{p}'" for p in SAMPLES)
    first = "SELECT count(*), avg(trip_distance) FROM trips WHERE passenger_count > 2"
    other = "SELECT max(fare_amount), sum(tip_amount) FROM trips WHERE trip_distance < 1.5"
    code = ("import json, sys\nimport bamql\n"
            f"con = bamql.connect({str(sample_store)!r}, device='cpu')\n"
            "a = con.sql(sys.argv[1]).rows()\n"
            "registries = 'numba.np.linalg' in sys.modules\n"  # imported by numba's refresh
            "b = con.sql(sys.argv[2]).rows() if len(sys.argv) > 2 else None\n"
            "print(json.dumps([a, b, registries]))\n")
    env = dict(os.environ, BAMQL_CACHE_DIR=str(tmp_path))

    def run(*queries):
        r = subprocess.run([sys.executable, "-c", code, *queries], capture_output=True,
                           text=True, env=env, timeout=600)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout.splitlines()[-1])

    run(first)  # compiles and keeps the kernels
    a, b, registries = run(first, other)  # loads them, then compiles another query's
    assert not registries  # the cached kernels loaded without numba's refresh
    want = [duckdb.sql(f"{q.replace('FROM trips', f'FROM read_csv_auto([{files}])')}").fetchall()
            for q in (first, other)]
    flat = lambda rows: [x for r in rows for x in r]  # noqa: E731
    assert flat(a) == pytest.approx(flat(want[0])) and flat(b) == pytest.approx(flat(want[1]))
