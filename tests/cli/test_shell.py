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
    for q, text in [("SELECT q.* FROM trips", "only trips.*"),
                    ("SELECT AVG(x) FROM trips", "unknown column")]:
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
    from bamql.cli.shell import Shell

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
            "from bamql.api.session import Session\n"
            "real = Session.sql\n"
            "def sql(self, t):\n"
            "    if 'sleep' not in t:\n"
            "        return real(self, t)\n"
            "    print('sleeping', flush=True)\n"
            "    time.sleep(120)\n"
            "Session.sql = sql\n"
            "from bamql.cli.main import main\n"
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


# -- dot-commands over a real session: .read, .output, .maxrows, .explain, .timer, .help ---
@pytest.fixture(scope="module")
def session(taxi_store):
    from bamql.api.connection import connect

    with connect(taxi_store, device="cpu") as s:
        yield s


def _drive(monkeypatch, tmp_path, session, lines):
    """The shell's output for ``lines`` typed into it over ``session``."""
    from bamql.cli.shell import Shell

    monkeypatch.setenv("BAMQL_HISTORY", str(tmp_path / "hist"))
    feed = iter(lines)

    def fake_input(prompt=""):
        try:
            return next(feed)
        except StopIteration:
            raise EOFError from None

    monkeypatch.setattr("builtins.input", fake_input)
    out = io.StringIO()
    assert Shell(session, out=out).loop() == 0
    return out.getvalue()


BY_VENDOR = "SELECT vendor_id, COUNT(*) AS n FROM trips GROUP BY vendor_id ORDER BY vendor_id"
BY_PAYMENT = "SELECT payment_type, COUNT(*) AS n FROM trips GROUP BY payment_type ORDER BY payment_type"


def test_read_runs_a_files_statements_and_goes_on_after_a_bad_one(monkeypatch, tmp_path, session):
    script = tmp_path / "q.sql"
    script.write_text("SELECT COUNT(*) AS n\nFROM trips;\nSELECT AVG(nope) FROM trips;\n"
                      f".mode csv\n{BY_VENDOR}\n")  # the last statement without its ';'
    out = _drive(monkeypatch, tmp_path, session, [f".read {script}", "SELECT COUNT(*) AS two FROM trips;",
                                                  ".read /no/such/file.sql", ".read"])
    lines = out.splitlines()
    rows = session.store("trips").rows
    assert f"| {rows} |" in lines
    assert "error: unknown column 'nope'" in out and "Traceback" not in out
    want = session.sql(BY_VENDOR).table.to_pylist()
    assert '"vendor_id","n"' in lines
    assert [f"{r['vendor_id']},{r['n']}" for r in want] == \
        lines[lines.index('"vendor_id","n"') + 1:][:len(want)]
    i = lines.index('"two"')  # the shell goes on in the mode the file set
    assert lines[i + 1] == str(rows)
    assert "error: cannot read '/no/such/file.sql': No such file or directory" in lines
    assert "usage: .read FILE" in lines


def test_read_of_a_file_that_reads_itself_stops(monkeypatch, tmp_path, session):
    script = tmp_path / "loop.sql"
    script.write_text(f".read {script}\n")
    out = _drive(monkeypatch, tmp_path, session, [f".read {script}", "SELECT COUNT(*) AS three FROM trips;"])
    assert "more than 16 deep" in out and "| three |" in out


def test_output_to_a_file_and_back(monkeypatch, tmp_path, session):
    dest = tmp_path / "out.csv"
    out = _drive(monkeypatch, tmp_path, session, [
        ".mode csv", f".output {dest}", f"{BY_VENDOR};", "SELECT AVG(nope) FROM trips;",
        ".output", f"{BY_PAYMENT};", ".output /no/such/dir/x.csv", "SELECT COUNT(*) AS seven FROM trips;"])
    import pyarrow.csv as pacsv

    got = pacsv.read_csv(dest).to_pylist()
    assert got == session.sql(BY_VENDOR).table.to_pylist()
    assert '"vendor_id","n"' not in out  # the file's result, not the terminal's
    assert "error: unknown column 'nope'" in out  # errors stay on the terminal
    assert '"payment_type","n"' in out and '"payment_type"' not in dest.read_text()
    assert "error: cannot write to '/no/such/dir/x.csv': No such file or directory" in out
    rows = session.store("trips").rows
    assert out.splitlines()[-3:-1] == ['"seven"', str(rows)]  # results still come to the terminal


def test_maxrows(monkeypatch, tmp_path, session):
    n = session.sql(BY_PAYMENT).table.num_rows
    assert n > 2
    out = _drive(monkeypatch, tmp_path, session, [".maxrows 2", f"{BY_PAYMENT};", ".maxrows",
                                                  ".maxrows x", ".maxrows 0", f"{BY_PAYMENT};"])
    assert f"({n} rows, 2 shown)" in out
    assert "maxrows 2" in out and "usage: .maxrows N (0: every row)" in out
    assert out.rstrip().endswith(f"({n} rows)")


def test_explain_prints_the_plan_before_the_result(monkeypatch, tmp_path, session):
    q = "SELECT AVG(trip_distance) AS d FROM trips WHERE pickup_location_id = 255"
    plan = session.explain(q)
    out = _drive(monkeypatch, tmp_path, session, [".explain on", f"{q};", ".explain off", f"{q};",
                                                  ".explain maybe"])
    assert out.count(plan) == 1 and out.index(plan) < out.index("| d ")
    assert out.count("| d ") == 2
    assert "usage: .explain on|off" in out


def test_timer_and_help(monkeypatch, tmp_path, session):
    from bamql.cli.completion import DOT_COMMANDS

    q = "SELECT COUNT(*) AS one FROM trips;"
    out = _drive(monkeypatch, tmp_path, session, [".timer on", q, ".timer off", q, ".timer", ".help"])
    assert out.count("Run Time: ") == 1 and "usage: .timer on|off" in out
    helptext = out[out.index("Enter SQL"):]
    assert all(c in helptext for c in DOT_COMMANDS if c != ".exit")


# -- the line editor: prompt_toolkit when installed and on a terminal, input() otherwise ----
def _tty(monkeypatch, term):
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setenv("TERM", term)


def test_input_is_the_fallback(monkeypatch, tmp_path):
    from bamql.cli.shell import Shell, _line_editor
    from bamql.config import Config

    cfg = Config(history=tmp_path / "hist")
    assert _line_editor(Shell(FakeSession(), out=io.StringIO(), config=cfg)) is None  # not a tty
    _tty(monkeypatch, "xterm-256color")
    monkeypatch.setitem(sys.modules, "prompt_toolkit", None)  # not installed
    assert _line_editor(Shell(FakeSession(), out=sys.stdout, config=cfg)) is None


def test_prompt_toolkit_on_a_terminal(monkeypatch, tmp_path):
    pytest.importorskip("prompt_toolkit")
    from bamql.cli.shell import Shell, _line_editor
    from bamql.config import Config

    cfg = Config(history=tmp_path / "d" / "hist")
    _tty(monkeypatch, "dumb")  # no cursor movement: input() and readline
    assert _line_editor(Shell(FakeSession(), out=sys.stdout, config=cfg)) is None
    _tty(monkeypatch, "xterm-256color")
    monkeypatch.setenv("PROMPT_TOOLKIT_NO_CPR", "1")
    assert callable(_line_editor(Shell(FakeSession(), out=sys.stdout, config=cfg)))


def test_prompt_toolkit_through_a_pty(taxi_store, tmp_path):
    pytest.importorskip("prompt_toolkit")
    env = {"BAMQL_HISTORY": str(tmp_path / "hist"), "PATH": "/usr/bin:/bin",
           "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1", "PYTHONPATH": ":".join(sys.path)}
    sh = pexpect.spawn(sys.executable, ["-m", "bamql.cli", "shell", str(taxi_store), "--device", "cpu"],
                       env=env, encoding="utf-8", timeout=60, dimensions=(40, 200))
    sh.expect("bamql>")
    sh.send("SELECT COUNT(*) AS n\r")  # Enter before the ';' starts a new line
    sh.expect(r"\.\.\.>")
    sh.send("FROM trips t WHERE t.passenger_c")
    sh.send("\t")  # completes the column through the alias named in FROM
    sh.expect("ount")
    sh.send(" >= 0;\r")
    sh.expect(r"\|\s+60000\s+\|")
    sh.expect("bamql>")
    sh.send("\x04")  # Ctrl-D leaves
    sh.expect(pexpect.EOF)
    sh.close()
    assert sh.exitstatus == 0
    assert "+FROM trips t WHERE t.passenger_count >= 0;" in (tmp_path / "hist").read_text()


def test_piped_input_prints_results_alone_and_fails_with_its_errors(monkeypatch):
    """Input from a pipe: no banner or prompts on stdout, errors on stderr, exit code 1
    where a statement failed (as DuckDB's and sqlite's shells do)."""
    from bamql.cli.shell import Shell

    for text, code in (("SELECT bug FROM trips;\nSELECT 1 FROM trips;\n", 1),
                       ("SELECT 1 FROM trips", 0)):
        monkeypatch.setattr("sys.stdin", io.StringIO(text))
        out, err = io.StringIO(), io.StringIO()
        monkeypatch.setattr("sys.stderr", err)
        assert Shell(FakeSession(), out=out, interactive=False).loop() == code
        assert "bamql>" not in out.getvalue() and "bamql shell" not in out.getvalue()
        assert ("error:" in err.getvalue()) is (code == 1)  # an internal error here


def test_open_switches_the_data_and_modes_render_as_named(monkeypatch, tmp_path, taxi_store):
    from bamql.api.connection import connect

    s = connect(None, device="cpu")
    out = _drive(monkeypatch, tmp_path, s, [".open /no/such/dir", f".open {taxi_store}",
                                            ".mode markdown", f"{BY_VENDOR};", ".mode nope",
                                            ".mode line", "SELECT 1 AS one;"])
    lines = out.splitlines()
    assert any(x.startswith("error: ") and "/no/such/dir" in x for x in lines)
    assert any(x.startswith("opened ") and "trips" in x for x in lines)
    assert "| vendor_id | n " in out.replace("|-", "")
    assert any(x.startswith("usage: .mode table|box|markdown|line|csv|json") for x in lines)
    assert "one = 1" in lines
