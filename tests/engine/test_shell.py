from __future__ import annotations

import subprocess
import sys

import pexpect


def _spawn(args, tmp_path):
    env = {"BAMQL_HISTORY": str(tmp_path / "hist"), "PATH": "/usr/bin:/bin", "TERM": "dumb",
           "PYTHONPATH": ":".join(sys.path)}
    return pexpect.spawn(sys.executable, ["-m", "bamql.cli", *args], env=env, encoding="utf-8",
                         timeout=120)


def test_shell_through_a_pty(taxi_store, tmp_path):
    sh = _spawn(["shell", str(taxi_store), "--device", "cpu"], tmp_path)
    sh.expect("bamql> ")
    sh.sendline(".tables")
    sh.expect("trips")
    sh.expect("bamql> ")
    sh.sendline(".schema trips")
    sh.expect(r"pickup_location_id\s+int64\s+stored as int16, page value sets")
    sh.expect(r"payment_type\s+int64\s+stored as int8, page value sets")
    sh.expect(r"total_amount\s+double\s+stored as int16 / 10\^2")  # cents in an int16
    sh.expect("bamql> ")
    sh.sendline(".timer on")
    sh.expect("bamql> ")
    # a statement over two lines
    sh.sendline("SELECT COUNT(*) AS n")
    sh.expect(r"\.\.\.> ")
    sh.sendline("FROM trips;")
    sh.expect("60000")
    sh.expect("Run Time")
    sh.expect("bamql> ")
    # an error in the middle: the shell says so and carries on
    sh.sendline("SELECT AVG(nope) FROM trips;")
    sh.expect("error: unknown column 'nope'")
    sh.expect("bamql> ")
    sh.sendline(".mode csv")
    sh.expect("bamql> ")
    sh.sendline("SELECT vendor_id, COUNT(*) AS n FROM trips GROUP BY vendor_id ORDER BY vendor_id;")
    sh.expect('"vendor_id","n"')
    sh.expect("bamql> ")
    sh.sendline("EXPLAIN ANALYZE SELECT AVG(trip_distance) FROM trips WHERE pickup_location_id = 255;")
    sh.expect("amplification")
    sh.expect("bamql> ")
    sh.sendline(".bogus")
    sh.expect("unknown command")
    sh.sendline(".quit")
    sh.expect(pexpect.EOF)
    sh.close()
    assert sh.exitstatus == 0
    assert "SELECT COUNT(*) AS n" in (tmp_path / "hist").read_text()  # history kept


def _run(*args):
    return subprocess.run([sys.executable, "-m", "bamql.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


def test_sql_one_shot_formats(taxi_store):
    q = "SELECT payment_type, COUNT(*) AS n FROM trips GROUP BY payment_type ORDER BY payment_type"
    r = _run("sql", taxi_store, q, "--format", "json", "--device", "cpu")
    assert r.returncode == 0, r.stderr
    import json

    rows = json.loads(r.stdout)
    assert [x["payment_type"] for x in rows] == sorted(x["payment_type"] for x in rows)
    assert sum(x["n"] for x in rows) == 60_000
    r = _run("sql", taxi_store, q, "--format", "csv", "--device", "cpu")
    assert r.stdout.splitlines()[0] == '"payment_type","n"'
    r = _run("sql", taxi_store, "EXPLAIN " + q, "--device", "cpu")
    assert "columns:" in r.stdout and "estimated bytes" in r.stdout


def test_sql_errors_are_one_line(taxi_store):
    for q, text in [("SELECT * FROM trips", "SELECT *"), ("SELECT AVG(x) FROM trips", "unknown column")]:
        r = _run("sql", taxi_store, q, "--device", "cpu")
        assert r.returncode == 1
        assert r.stderr.strip().count("\n") == 0 and text in r.stderr, r.stderr
    r = _run("sql", taxi_store, "SELECT COUNT(*) FROM trips", "--device", "gpu")
    assert r.returncode == 1 and "GPU" in r.stderr and "Traceback" not in r.stderr
