"""bamql serve and its clients: answers, errors, tokens, TLS, threads, the CLI, shutdown."""

from __future__ import annotations

import datetime
import decimal
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import pyarrow.flight as fl
import pytest

import bamql
from bamql.api.remote_session import RemoteSession
from bamql.errors import PlanError, ServerError, UsageError
from bamql.server.flight import BamqlServer
from tests.reference import assert_same_rows, normalize

ROOT = Path(__file__).resolve().parents[2]

#: (SQL, parameters, ordered) answered by the server, the session and DuckDB alike
QUERIES = [
    ("SELECT COUNT(*) AS n, SUM(fare_amount), AVG(congestion_surcharge) FROM trips", None, False),
    ("SELECT passenger_count, COUNT(*), MAX(tip_amount) FROM trips WHERE trip_distance > ? "
     "GROUP BY passenger_count ORDER BY passenger_count", [2.5], True),
    ("SELECT payment_type, AVG(total_amount) FROM trips WHERE pickup_location_id IN ? "
     "AND fare_amount >= $lo GROUP BY 1 ORDER BY 1", None, True),  # params set below
    ("SELECT COUNT(*), MIN(pickup_datetime) FROM trips WHERE pickup_datetime >= ?",
     [datetime.datetime(2019, 6, 1)], False),
    ("SELECT SUM(trip_distance) FROM trips WHERE fare_amount > ? AND vendor_id = ?",
     [decimal.Decimal("1e6"), 1], False),  # no row matches: a NULL sum
]


@pytest.fixture(scope="module")
def session(taxi_store):
    with bamql.connect(taxi_store, device="cpu") as s:
        yield s


@pytest.fixture(scope="module")
def server(session):
    srv = BamqlServer(session)
    yield srv
    srv.shutdown()


@pytest.fixture(scope="module")
def remote(server):
    with bamql.connect(server.url) as r:
        yield r


def _duck(sql: str, params, table) -> list[tuple]:
    con = duckdb.connect()
    con.register("trips", normalize(table))
    return con.execute(sql, params).fetchall()


@pytest.mark.parametrize("i", range(len(QUERIES)))
def test_answers_are_the_sessions_and_duckdbs(i, remote, session, taxi_table):
    sql, params, ordered = QUERIES[i]
    if "$lo" in sql:  # named parameters can't mix with ?: DuckDB's form of the same query
        sql = sql.replace(" IN ?", " IN $zones")
        params = {"zones": [255, 256, 48], "lo": 5}
        ref = _duck(sql.replace("IN $zones", "IN (255, 256, 48)"), {"lo": 5}, taxi_table)
    else:
        ref = _duck(sql, params, taxi_table)
    res = remote.sql(sql, params)
    local = session.sql(sql, params)
    assert res.table.equals(local.table) and res.table.schema == local.table.schema
    assert_same_rows(res.rows(), ref, ordered)
    # the plan and the I/O statistics come along
    assert res.plan_text == local.plan_text and not res.is_explain
    assert res.stats.bytes_read == local.stats.bytes_read and res.stats.rows == local.stats.rows > 0
    assert res.stats.device == local.stats.device == "cpu"
    assert res.stats.columns.keys() == local.stats.columns.keys()


def test_explain_catalog_and_schema(remote, session):
    sql = QUERIES[1][0]
    assert remote.explain(sql, [1.0]) == session.explain(sql, [1.0])
    res = remote.sql("EXPLAIN ANALYZE " + sql, [1.0])
    assert res.is_explain and res.table.column_names == ["explain"]
    assert "Analyze:" in "\n".join(res.table["explain"].to_pylist())
    assert remote.tables() == session.tables() == ["trips"]
    assert remote.store("trips").rows == session.store("trips").rows
    assert remote.schema("trips").equals(session.schema("trips"), check_metadata=True)
    with pytest.raises(PlanError, match="unknown table 'nope'"):
        remote.schema("nope")


def test_generic_flight_clients(server, session):
    """A plain Flight client: list_flights, get_flight_info then do_get, the actions."""
    c = fl.FlightClient(server.url)
    flights = list(c.list_flights())
    assert [f.descriptor.path for f in flights] == [[b"trips"]]
    assert flights[0].total_records == session.store("trips").rows
    cmd = json.dumps({"sql": "SELECT vendor_id, COUNT(*) FROM trips GROUP BY 1 ORDER BY 1",
                      "params": None}).encode()
    info = c.get_flight_info(fl.FlightDescriptor.for_command(cmd))
    t = c.do_get(info.endpoints[0].ticket).read_all()
    assert t.to_pylist() == session.sql(json.loads(cmd)["sql"]).table.to_pylist()
    assert info.total_records == t.num_rows
    health = json.loads(next(iter(c.do_action(fl.Action("health", b"")))).body.to_pybytes())
    assert health["status"] == "ok" and health["tables"] == ["trips"] and health["device"] == "cpu"
    c.close()


@pytest.mark.parametrize("sql, params, cls, message", [
    ("SELECT nope FROM trips", None, PlanError, "unknown column 'nope'"),
    ("SELECT COUNT(*) FROM trips WHERE fare_amount > ?", None, UsageError, "placeholders"),
    ("SELECT COUNT(*) FROM trips WHERE fare_amount > ?", [1, 2], UsageError, None),
    ("SELECT COUNT(*) FROM 'x.parquet'", None, PlanError, "--allow-files"),
])
def test_errors_arrive_as_their_class_and_line(sql, params, cls, message, remote, session):
    with pytest.raises(cls) as got:
        remote.sql(sql, params)
    if "parquet" not in sql:  # the session's own error, word for word
        with pytest.raises(cls) as want:
            session.sql(sql, params)
        assert str(got.value) == str(want.value)
    if message:
        assert message in str(got.value)
    assert "\n" not in str(got.value)
    assert remote.sql("SELECT COUNT(*) FROM trips").rows() == [(session.store("trips").rows,)]


def test_a_crash_in_one_query_is_one_line_and_the_server_goes_on(session, monkeypatch, caplog):
    srv = BamqlServer(session)
    try:
        with RemoteSession(srv.url) as r:
            monkeypatch.setattr(srv, "_run", lambda command: 1 / 0)
            with pytest.raises(ServerError, match=r"internal error: ZeroDivisionError: division by zero$"):
                r.sql("SELECT COUNT(*) FROM trips")
            monkeypatch.undo()
            assert r.sql("SELECT COUNT(*) FROM trips").rows() == [(session.store("trips").rows,)]
        with pytest.raises(UsageError, match="is closed"):
            r.sql("SELECT COUNT(*) FROM trips")
    finally:
        srv.shutdown()


def test_parameters_of_no_sql_type_are_refused_by_the_client(remote):
    with pytest.raises(UsageError, match=r"parameter \$1 is a object"):
        remote.sql("SELECT COUNT(*) FROM trips WHERE fare_amount > ?", [object()])
    with pytest.raises(UsageError, match="list or tuple"):
        remote.sql("SELECT COUNT(*) FROM trips WHERE fare_amount > ?", 3)


def test_two_clients_at_once(server, session):
    queries = [(sql, p) for sql, p, _ in QUERIES if "$lo" not in sql]
    want = [session.sql(sql, p).table for sql, p in queries]
    failures: list[BaseException] = []

    def client() -> None:
        try:
            with RemoteSession(server.url) as r:
                for _ in range(3):
                    for (sql, p), w in zip(queries, want, strict=True):
                        assert r.sql(sql, p).table.equals(w)
        except BaseException as e:  # noqa: B036 - reported by the test's thread
            failures.append(e)

    threads = [threading.Thread(target=client) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not failures, failures


def test_a_token_is_required_when_set(session, monkeypatch):
    monkeypatch.delenv("BAMQL_SERVER_TOKEN", raising=False)
    srv = BamqlServer(session, token="s3cret")
    try:
        with pytest.raises(ServerError, match="needs a token"):
            bamql.connect(srv.url)
        with pytest.raises(ServerError, match="wrong token"):
            bamql.connect(srv.url, token="guess")
        raw = fl.FlightClient(srv.url)  # every call is checked, not only the first
        with pytest.raises(fl.FlightUnauthenticatedError):
            list(raw.list_flights())
        with bamql.connect(srv.url, token="s3cret") as r:
            assert r.tables() == ["trips"]
        monkeypatch.setenv("BAMQL_SERVER_TOKEN", "s3cret")
        with bamql.connect(srv.url) as r:
            assert r.sql("SELECT COUNT(*) FROM trips").rows() == [(session.store("trips").rows,)]
    finally:
        srv.shutdown()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
def test_tls(session, tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    srv = BamqlServer(session, tls=(cert.read_bytes(), key.read_bytes()))
    try:
        assert srv.url.startswith("grpc+tls://")
        with bamql.connect(srv.url, tls_root_certs=cert) as r:
            assert r.sql("SELECT COUNT(*) FROM trips").rows() == [(session.store("trips").rows,)]
        with pytest.raises(ServerError):  # plain gRPC does not reach a TLS server
            bamql.connect(srv.url.replace("grpc+tls", "grpc"))
    finally:
        srv.shutdown()


def test_connect_takes_server_keywords_only_for_a_url(taxi_store):
    with pytest.raises(UsageError, match="server's settings"):
        bamql.connect("grpc://127.0.0.1:1", device="cpu")
    with pytest.raises(UsageError, match="for a server's URL"):
        bamql.connect(taxi_store, token="x")
    with pytest.raises(ServerError, match="cannot reach"):
        bamql.connect("grpc://127.0.0.1:1")


def _bamql(*args: str, **kw) -> list[str]:
    return [sys.executable, "-m", "bamql.cli", *args]


@pytest.mark.slow  # in CI's slow run
def test_bamql_serve_answers_sql_and_stops_on_sigterm(taxi_store):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BAMQL_SERVER_TOKEN": "t0k"}
    proc = subprocess.Popen(_bamql("serve", str(taxi_store), "--port", "0", "--device", "cpu"),
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if "serving" in line:
                break
        m = re.search(r"serving .* on (grpc://127\.0\.0\.1:\d+) \(", "".join(lines))
        assert m, lines
        sql = "SELECT passenger_count, COUNT(*) FROM trips GROUP BY 1 ORDER BY 1"
        remote = subprocess.run(_bamql("sql", "--server", m.group(1), sql, "--format", "csv"),
                                capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
        local = subprocess.run(_bamql("sql", "--device", "cpu", str(taxi_store), sql, "--format",
                                      "csv"), capture_output=True, text=True, env=env, cwd=ROOT,
                               timeout=120)
        assert remote.returncode == 0, remote.stderr
        assert remote.stdout == local.stdout and remote.stdout.count("\n") > 2
        bad = subprocess.run(_bamql("sql", "--server", m.group(1), "SELECT nope FROM trips"),
                             capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
        assert bad.returncode == 1
        want = "bamql: error: unknown column 'nope' in table 'trips' at line 1, column 8"
        assert bad.stderr.strip() == want
        proc.send_signal(signal.SIGTERM)
        rest = proc.stderr.read()
        assert proc.wait(60) == 0, rest
        assert "stopped" in rest and "Traceback" not in rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sql_with_server_refuses_local_settings():
    r = subprocess.run(_bamql("sql", "--server", "grpc://127.0.0.1:1", "data", "SELECT 1"),
                       capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert r.returncode == 1 and "with --server" in r.stderr and r.stderr.count("\n") == 1


def test_the_shell_runs_on_a_remote_session(remote, session):
    import io

    from bamql.cli.shell import Shell

    out = io.StringIO()
    sh = Shell(remote, out=out)
    sh.command(".tables")
    sh.command(".schema trips")
    sh.run_sql("SELECT vendor_id, COUNT(*) FROM trips GROUP BY 1 ORDER BY 1")
    sh.run_sql("SELECT nope FROM trips")
    text = out.getvalue()
    assert text.startswith("trips\ntrips: 60,000 rows, 4096 B pages\n")
    assert "fare_amount" in text and "error: unknown column 'nope'" in text
    local = io.StringIO()
    Shell(session, out=local).run_sql("SELECT vendor_id, COUNT(*) FROM trips GROUP BY 1 ORDER BY 1")
    assert local.getvalue() in text


def test_serve_on_a_port_in_use_is_one_line(taxi_store, server):
    from bamql.server.flight import serve

    s = bamql.connect(taxi_store, device="cpu")
    with pytest.raises(UsageError, match="cannot listen on 127.0.0.1:"):
        serve(s, print, port=server.port)
    with pytest.raises(UsageError, match="is closed"):  # serve() closed the session it was given
        s.sql("SELECT COUNT(*) FROM trips")
