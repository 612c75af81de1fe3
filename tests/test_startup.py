"""Start-up: ``import bamql`` and the CLI's parser load no heavy package, a one-shot CPU query
loads none it does not use, and the names that load on first use are the engine's own."""

from __future__ import annotations

import json
import subprocess
import sys

import duckdb
import pytest

import bamql
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
    mods = loaded("import bamql.cli\nbamql.cli.build_parser().parse_args(['sql', 'SELECT 1'])")
    assert heavy(mods) == set()
    assert "bamql.engine.session" not in mods and "bamql.engine.server" not in mods


def test_lazy_names_are_the_engines_own():
    from bamql import Session, col, connect, count
    from bamql.engine import frame, session

    assert (Session, connect) == (session.Session, session.connect)
    assert (col, count) == (frame.col, frame.count)
    assert (bamql.engine.Session, bamql.engine.col) == (Session, col)
    assert set(bamql.__all__) <= set(dir(bamql))
    assert bamql.planner.__name__ == "bamql.planner"  # a subpackage, as after its import
    for module in (bamql, bamql.engine):
        with pytest.raises(AttributeError, match="no attribute 'nope'"):
            module.nope  # noqa: B018


def test_a_cpu_query_over_a_store_loads_only_what_it_uses(sample_store):
    where = "passenger_count > 2 AND fare_amount < 10"
    query = f"SELECT count(*) FROM trips WHERE {where}"
    mods = loaded("from bamql.cli import main\n"
                  f"assert main(['sql', '--device', 'cpu', '--format', 'csv', {str(sample_store)!r}, "
                  f"{query!r}]) == 0\n")
    # the query ran: numba's kernels, pyarrow's result and sqlglot's parse are there ...
    assert {"numba", "pyarrow", "sqlglot"} <= mods
    # ... but nothing of the GPU, files in place, progress bars or the server, nor pandas
    # (which pyarrow's conversions between NumPy and Arrow would load: storage.arrownp)
    for m in ("numba.cuda", "pyarrow.dataset", "pyarrow.flight", "rich", "bamql.engine.server",
              "pandas"):
        assert m not in mods, m


def test_a_cpu_query_over_a_store_answers_as_duckdb(sample_store, capsys):
    from bamql.cli import main

    where = "passenger_count > 2 AND fare_amount < 10"
    select = "count(*) AS n, sum(passenger_count) AS p, max(fare_amount) AS f"
    assert main(["sql", "--device", "cpu", "--format", "json", str(sample_store),
                 f"SELECT {select} FROM trips WHERE {where}"]) == 0
    got = json.loads(capsys.readouterr().out)
    files = ", ".join(f"'{p}'" for p in SAMPLES)
    (n, p, f), = duckdb.sql(f"SELECT {select} FROM read_csv_auto([{files}]) WHERE {where}").fetchall()
    assert got == [{"n": n, "p": p, "f": f}] and n > 0
