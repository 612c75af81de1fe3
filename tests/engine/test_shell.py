from __future__ import annotations

import io
import subprocess
import sys
import time
import types

import pexpect
import pytest


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


# -- the shell survives Ctrl-C and bugs, and splits statements on tokens ---------------------
class FakeSession:
    """Records each statement; ``slow`` raises KeyboardInterrupt (Ctrl-C while it runs),
    ``bug`` an unexpected exception."""

    path, device, note = "fake", "cpu", ""

    def __init__(self):
        self.seen: list[str] = []

    def tables(self):
        raise RuntimeError("catalog exploded")

    def sql(self, text):
        import pyarrow as pa

        self.seen.append(text)
        if "slow" in text:
            raise KeyboardInterrupt
        if "bug" in text:
            raise RuntimeError("something internal\nsecond line")
        return types.SimpleNamespace(is_explain=False, table=pa.table({"n": [len(self.seen)]}),
                                     stats=None)


def _shell(monkeypatch, tmp_path, lines, debug=False):
    from bamql.engine.shell import Shell

    monkeypatch.setenv("BAMQL_HISTORY", str(tmp_path / "hist"))
    feed = iter(lines)

    def fake_input(prompt=""):
        try:
            line = next(feed)
        except StopIteration:
            raise EOFError from None
        if line is KeyboardInterrupt:
            raise KeyboardInterrupt
        return line

    monkeypatch.setattr("builtins.input", fake_input)
    s, out = FakeSession(), io.StringIO()
    shell = Shell(s, out=out, debug=True) if debug else Shell(s, out=out)
    try:
        assert shell.loop() == 0  # Ctrl-D leaves, with status 0
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C left the shell")
    return s, out.getvalue()


def test_ctrl_c_cancels_the_running_statement_and_the_shell_stays_open(monkeypatch, tmp_path):
    s, out = _shell(monkeypatch, tmp_path, ["SELECT slow; SELECT skipped;", "SELECT 1;"])
    assert "^C cancelled" in out
    assert s.seen == ["SELECT slow", "SELECT 1"]  # the rest of the cancelled line is dropped


def test_an_internal_error_is_one_line_and_the_shell_stays_open(monkeypatch, tmp_path):
    s, out = _shell(monkeypatch, tmp_path, ["SELECT bug;", ".tables", "SELECT 1;"])
    lines = out.splitlines()
    assert "internal error: RuntimeError: something internal (BAMQL_DEBUG=1 shows a traceback)" \
        in lines
    assert any(line.startswith("internal error: RuntimeError: catalog exploded") for line in lines)
    assert "second line" not in out and "Traceback" not in out
    assert s.seen == ["SELECT bug", "SELECT 1"]
    _, out = _shell(monkeypatch, tmp_path, ["SELECT bug;"], debug=True)
    assert "Traceback" in out and "internal error: RuntimeError" in out


def test_a_semicolon_inside_a_string_does_not_split_the_statement(monkeypatch, tmp_path):
    s, _ = _shell(monkeypatch, tmp_path, [
        "SELECT 'a;b' AS s; SELECT \"x;y\" FROM t;",
        "SELECT 'ends;",  # a ';' at the end of a line, inside a string: not the end
        "here' AS s; -- a comment; with a semicolon",
        "/* only ; a comment */",
        "SELECT 2 AS two",
        ";",
    ])
    assert s.seen == ["SELECT 'a;b' AS s", 'SELECT "x;y" FROM t', "SELECT 'ends;\nhere' AS s",
                      "SELECT 2 AS two"]


def test_ctrl_c_in_a_real_terminal_cancels_the_query(taxi_store, tmp_path):
    # a statement that sleeps stands in for a long query; SIGINT comes through the pty
    # SIGINT's default handler set again: a test run started in the background of a
    # non-interactive shell inherits SIGINT ignored, and Python keeps an ignored SIGINT
    code = ("import signal, sys, time\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "from bamql.engine.session import Session\n"
            "real = Session.sql\n"
            "def sql(self, t):\n"
            "    if 'sleep' not in t:\n"
            "        return real(self, t)\n"
            "    print('sleeping', flush=True)\n"
            "    time.sleep(120)\n"
            "Session.sql = sql\n"
            "from bamql.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    env = {"BAMQL_HISTORY": str(tmp_path / "hist"), "PATH": "/usr/bin:/bin", "TERM": "dumb",
           "PYTHONPATH": ":".join(sys.path)}
    sh = pexpect.spawn(sys.executable, ["-c", code, "shell", str(taxi_store), "--device", "cpu"],
                       env=env, encoding="utf-8", timeout=120)
    sh.expect("bamql> ")
    sh.sendline("SELECT sleep FROM trips;")
    sh.expect("sleeping")  # the statement runs: on a loaded machine that can take seconds
    time.sleep(0.2)
    sh.sendintr()
    sh.expect("cancelled")
    sh.expect("bamql> ")
    sh.sendline("SELECT COUNT(*) AS n FROM trips;")
    sh.expect("60000")
    sh.expect("bamql> ")
    sh.sendeof()
    sh.expect(pexpect.EOF)
    sh.close()
    assert sh.exitstatus == 0
