"""A one-shot ``bamql sql`` leaves its objects to the OS at exit (``cli._skip_teardown``):
its answer and exit code as before, the garbage collector stopped only where the command
runs as the process's own."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("as_command", [True, False])
def test_only_the_command_itself_stops_the_collector(sample_store, as_command):
    args = ["sql", str(sample_store), "SELECT count(*) FROM trips", "--device", "cpu"]
    call = (f"sys.argv = ['bamql', *{args!r}]\nrc = main()" if as_command
            else f"rc = main({args!r})")
    code = (f"import gc, sys\nfrom bamql.cli.main import main\n{call}\n"
            "print('gc', gc.isenabled(), gc.get_freeze_count() > 0, rc, file=sys.stderr)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "20000" in r.stdout, r.stderr
    want = "gc False True 0" if as_command else "gc True False 0"
    assert r.stderr.strip().splitlines()[-1] == want


def test_a_one_shot_query_answers_and_exits_with_its_code(taxi_store, tmp_path):
    def sql(*args):
        return subprocess.run([sys.executable, "-m", "bamql.cli", "sql", str(taxi_store), *args,
                               "--device", "cpu"], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path)

    r = sql("SELECT COUNT(*) AS n, SUM(passenger_count) AS p FROM trips WHERE fare_amount > 20",
            "--format", "csv")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    n, p = map(int, r.stdout.splitlines()[1].split(","))
    import pyarrow.compute as pc

    from bamql.storage.store import PageStore

    with PageStore(taxi_store / "trips") as s:
        t = s.to_table(["fare_amount", "passenger_count"])
    kept = t.filter(pc.greater(t["fare_amount"], 20))
    assert (n, p) == (kept.num_rows, pc.sum(kept["passenger_count"]).as_py())
    r = sql("SELECT nope FROM trips")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("bamql: error:") and len(r.stderr.splitlines()) == 1
