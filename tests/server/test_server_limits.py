"""bamql serve under hostile clients: request, SQL, nesting and time limits, errors of one
line without the server's paths, files confined to the directories it serves, and no
listening beyond localhost without a token (issue 41)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.flight as fl
import pyarrow.parquet as pq
import pytest

import bamql
from bamql.cli.main import main
from bamql.config import Config
from bamql.errors import PlanError, ServerError, UsageError
from bamql.server import flight as server_module
from bamql.server.flight import BamqlServer, loopback
from bamql.server.limits import json_nesting, sql_nesting
from bamql.server.roots import FileRoots

INSTALL = str(Path(bamql.__file__).resolve().parent)


@pytest.fixture(scope="module")
def session(taxi_store):
    with bamql.connect(taxi_store, device="cpu") as s:
        yield s


@pytest.fixture
def make_server(session):
    """A server over the shared session with the given limits (Config keywords)."""
    made = []

    def make(**kw):
        files = kw.pop("allow_files", None)
        srv = BamqlServer(session, allow_files=files, config=Config(**kw))
        made.append(srv)
        return srv

    yield make
    for srv in made:
        srv.shutdown()


def _ticket(sql: str, params=None) -> fl.Ticket:
    return fl.Ticket(json.dumps({"sql": sql, "params": params}).encode())


def _one_line(e: BaseException) -> str:
    """The error's text, checked to be one line without a traceback, bamql's install path
    or the server's process id."""
    text = str(e)
    assert "\n" not in text and "Traceback" not in text, text
    assert INSTALL not in text and "site-packages" not in text, text
    assert f"/proc/{os.getpid()}" not in text, text
    return text


def _or_chain(n: int) -> str:
    """A query whose planning takes long (a WHERE of ``n`` ORs)."""
    return "SELECT COUNT(*) FROM trips WHERE " + " OR ".join(f"fare_amount = {i}" for i in range(n))


def _rows(session) -> list[tuple]:
    return [(session.store("trips").rows,)]


# -- sizes and nesting ------------------------------------------------------------------------
def test_the_nesting_counts_skip_strings_and_comments():
    assert sql_nesting("SELECT ((1)) FROM t WHERE a = '(((' AND \"b(\" -- ((((\n /* ((( */") == 2
    assert sql_nesting("SELECT '((' || 'it''s ((' FROM t") == 0
    assert sql_nesting("/* never closed ((((") == 0 and sql_nesting("") == 0
    assert json_nesting(b'{"sql": "[[[[", "params": [[1, {"$decimal": "\\"[["}]]}') == 4
    assert json_nesting(b"") == 0


def test_a_ticket_beyond_the_limit_is_refused_before_it_is_read(make_server, session):
    srv = make_server(server_max_ticket=4096)
    c = fl.FlightClient(srv.url)
    big = "SELECT COUNT(*) FROM trips WHERE vendor_id IN (" + ",".join(["1"] * 3000) + ")"
    with pytest.raises(pa.ArrowInvalid) as e:  # INVALID_ARGUMENT
        c.do_get(_ticket(big)).read_all()
    assert "the ticket is 6,0" in _one_line(e.value) and "BAMQL_SERVER_MAX_TICKET" in str(e.value)
    with pytest.raises(pa.ArrowInvalid, match="the command is"):  # the descriptor of a command
        c.get_flight_info(fl.FlightDescriptor.for_command(_ticket(big).ticket))
    with pytest.raises(pa.ArrowInvalid, match="the action's body is"):
        list(c.do_action(fl.Action("explain", _ticket(big).ticket)))
    with bamql.connect(srv.url) as r:  # bamql's client raises the error's own class
        with pytest.raises(UsageError, match=r"^the ticket is 6,0\d\d bytes; this server reads "
                                             r"at most 4,096 \(BAMQL_SERVER_MAX_TICKET\)$"):
            r.sql(big)
        assert r.sql("SELECT COUNT(*) FROM trips").rows() == _rows(session)
    c.close()


def test_sql_beyond_the_limit_is_refused(make_server):
    srv = make_server(server_max_sql=100)
    with bamql.connect(srv.url) as r:
        with pytest.raises(PlanError, match=r"^the query is 1\d\d bytes of SQL; this server "
                                            r"takes at most 100 \(BAMQL_SERVER_MAX_SQL\)$"):
            r.sql("SELECT COUNT(*) FROM trips WHERE fare_amount > 1 AND trip_distance > 2 "
                  "AND tip_amount > 3 AND passenger_count > 0")
        with pytest.raises(PlanError, match="BAMQL_SERVER_MAX_SQL"):
            r.explain("SELECT COUNT(*) FROM trips WHERE " + "fare_amount > 1 AND " * 10 + "true")


def test_nesting_beyond_the_limit_is_refused(make_server, session):
    srv = make_server()  # the default: 200
    deep = "SELECT COUNT(*) FROM trips WHERE " + "(" * 201 + "fare_amount > 0" + ")" * 201
    with bamql.connect(srv.url) as r:
        with pytest.raises(PlanError, match=r"^the query nests parentheses 201 deep; this server "
                                            r"takes at most 200 \(BAMQL_SERVER_MAX_NESTING\)$"):
            r.sql(deep)
        ok = "SELECT COUNT(*) FROM trips WHERE " + "(" * 20 + "fare_amount > -1e9" + ")" * 20
        assert r.sql(ok).rows() == _rows(session)


def test_a_deeply_nested_json_ticket_is_one_line(make_server, session):
    srv = make_server()
    c = fl.FlightClient(srv.url)
    for deep in (b'{"sql": ' + b"[" * 5000 + b"]" * 5000 + b"}",
                 b'{"sql": "SELECT COUNT(*) FROM trips WHERE vendor_id IN ?", "params": ['
                 + b"[" * 300 + b"1" + b"]" * 300 + b"]}"):
        with pytest.raises(pa.ArrowInvalid) as e:
            c.do_get(fl.Ticket(deep)).read_all()
        assert "JSON nests" in _one_line(e.value) and "RecursionError" not in str(e.value)
    t = c.do_get(_ticket("SELECT COUNT(*) FROM trips")).read_all()
    assert t.column(0).to_pylist() == [_rows(session)[0][0]]
    c.close()


def test_do_put_parameters_beyond_the_limit_are_refused(make_server):
    from bamql.server import flightsql
    from bamql.server.proto import FlightSql_pb2 as pb

    srv = make_server(server_max_ticket=4096)
    c = fl.FlightClient(srv.url)
    made = list(c.do_action(fl.Action("CreatePreparedStatement", flightsql.pack(
        pb.ActionCreatePreparedStatementRequest(
            query="SELECT COUNT(*) FROM trips WHERE fare_amount > ?")))))
    handle = flightsql.unpack_as(pb.ActionCreatePreparedStatementResult,
                                 made[0].body.to_pybytes()).prepared_statement_handle
    desc = fl.FlightDescriptor.for_command(flightsql.pack(
        pb.CommandPreparedStatementQuery(prepared_statement_handle=handle)))
    params = pa.table({"p": pa.array([1.0] * 4096)})
    writer, _ = c.do_put(desc, params.schema)
    with pytest.raises(pa.ArrowInvalid) as e:
        for b in params.to_batches(max_chunksize=256):
            writer.write_batch(b)
        writer.close()
    assert "the parameters are over" in _one_line(e.value)
    c.close()


# -- time -------------------------------------------------------------------------------------
def test_a_query_past_its_time_is_answered_in_time_and_stopped(make_server, session):
    srv = make_server(server_query_timeout=0.5)
    sql = _or_chain(40_000)  # long to plan, were it not stopped
    with bamql.connect(srv.url) as r:
        start = time.monotonic()
        with pytest.raises(ServerError, match=r"^the query ran past this server's limit of 0.5 s "
                                              r"\(BAMQL_SERVER_QUERY_TIMEOUT\) and was stopped$"):
            r.sql(sql)
        assert time.monotonic() - start < 5
        # the work stops too, at its next Python step: after a compiled call it is in (a
        # kernel's compilation on a loaded machine) returns
        while srv.queries.running() and time.monotonic() - start < 60:
            time.sleep(0.05)
        assert srv.queries.running() == 0
        assert r.sql("SELECT COUNT(*) FROM trips").rows() == _rows(session)
    c = fl.FlightClient(srv.url)  # DEADLINE_EXCEEDED, for any client
    with pytest.raises(fl.FlightTimedOutError) as e:
        c.do_get(_ticket(sql)).read_all()
    _one_line(e.value)
    with pytest.raises(pa.ArrowException) as e:  # get_schema takes no Flight error: UNKNOWN
        c.get_schema(fl.FlightDescriptor.for_command(_ticket(sql).ticket))
    assert "BAMQL_SERVER_QUERY_TIMEOUT" in _one_line(e.value)
    c.close()


def test_queries_beyond_the_limit_at_once_are_answered_unavailable(make_server, session,
                                                                   monkeypatch):
    srv = make_server(server_max_queries=1)
    release, started = threading.Event(), threading.Event()
    run = session.sql

    def slow(text, params=None):
        started.set()
        release.wait(30)
        return run(text, params)

    monkeypatch.setattr(session, "sql", slow)
    first: list = []
    t = threading.Thread(target=lambda: first.append(
        fl.FlightClient(srv.url).do_get(_ticket("SELECT COUNT(*) FROM trips")).read_all()))
    t.start()
    try:
        assert started.wait(30)
        with pytest.raises(fl.FlightUnavailableError) as e:
            fl.FlightClient(srv.url).do_get(_ticket("SELECT COUNT(*) FROM trips")).read_all()
        assert "BAMQL_SERVER_MAX_QUERIES" in _one_line(e.value)
    finally:
        release.set()
        t.join(60)
    assert first[0].column(0).to_pylist() == [_rows(session)[0][0]]


# -- errors -----------------------------------------------------------------------------------
def test_get_schema_and_do_exchange_fail_in_one_line(make_server):
    srv = make_server()
    c = fl.FlightClient(srv.url)
    with pytest.raises(pa.ArrowException) as e:
        c.get_schema(fl.FlightDescriptor.for_path("nope"))
    assert "unknown table 'nope'" in _one_line(e.value)
    with pytest.raises(pa.ArrowException) as e:
        c.get_schema(fl.FlightDescriptor.for_command(_ticket("SELECT nope FROM trips").ticket))
    assert "unknown column 'nope'" in _one_line(e.value)
    with pytest.raises(pa.ArrowNotImplementedError) as e:  # UNIMPLEMENTED
        writer, reader = c.do_exchange(fl.FlightDescriptor.for_command(b"x"))
        reader.read_all()
    assert "bamql takes no DoExchange" in _one_line(e.value)
    assert c.get_schema(fl.FlightDescriptor.for_path("trips")).schema.names[:1]
    c.close()


def test_no_error_names_the_servers_install_or_process(make_server, session, monkeypatch,
                                                       caplog):
    srv = make_server()

    def crash(text, params=None):
        raise OSError(f"cannot read {INSTALL}/engine/x.py nor /proc/{os.getpid()}/maps")

    monkeypatch.setattr(session, "sql", crash)
    with bamql.connect(srv.url) as r:
        with pytest.raises(ServerError) as e:
            r.sql("SELECT COUNT(*) FROM trips")
    text = _one_line(e.value)
    assert text.endswith("internal error: OSError: cannot read <server path> nor /proc/<pid>/maps")
    assert INSTALL in caplog.text  # the server's log keeps it all


# -- files ------------------------------------------------------------------------------------
@pytest.fixture
def tree(tmp_path):
    """``root`` (served) with a file, a link to a file outside, a link to a directory
    outside; ``outside`` with a file."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    t = pa.table({"a": [1, 2, 3]})
    pq.write_table(t, root / "sub" / "in.parquet")
    pq.write_table(t, outside / "out.parquet")
    (root / "link.parquet").symlink_to(outside / "out.parquet")
    (root / "away").symlink_to(outside)
    return root, outside


def test_files_are_read_only_under_the_directories_served(make_server, tree):
    root, outside = tree
    srv = make_server(allow_files=[root])
    with bamql.connect(srv.url) as r:
        assert r.sql(f"SELECT COUNT(*) FROM '{root}/sub/in.parquet'").rows() == [(3,)]
        assert r.sql(f"SELECT COUNT(*) FROM '{root}/sub'").rows() == [(3,)]
        for spec in (f"{outside}/out.parquet",  # beyond the root
                     f"{root}/../outside/out.parquet",  # out by ..
                     f"{root}/link.parquet",  # a symlink out of it
                     f"{root}/away/out.parquet", f"{root}/*/out.parquet",  # through a linked dir
                     f"{root}/*.parquet", f"{root}",  # a glob, a directory that meet the link
                     "/proc/self/environ", "/etc/passwd.csv", f"file://{root}/sub/in.parquet"):
            with pytest.raises(PlanError) as e:
                r.sql(f"SELECT COUNT(*) FROM '{spec}'")
            text = _one_line(e.value)
            assert text == (f"this server reads files only under the directories it serves "
                            f"(bamql serve --allow-files DIR), not '{spec}'"), text
        with pytest.raises(PlanError):  # a parameter names no file
            r.sql("SELECT COUNT(*) FROM read_parquet(?)", [f"{outside}/out.parquet"])
        with pytest.raises(PlanError, match="--allow-files"):
            r.sql(f"SELECT COUNT(*) FROM read_parquet(['{root}/sub/in.parquet', "
                  f"'{outside}/out.parquet'])")


def test_the_roots_are_directories_given_explicitly(session, tree, tmp_path):
    root, _ = tree
    assert FileRoots([root / "away"]).roots == (tree[1].resolve(),)  # by real path
    for bad, text in ((True, "allow_files takes the directories"), ([], "allow_files takes"),
                      ([root / "sub" / "in.parquet"], "is no directory"),
                      (["/"], "system directory"), (["/proc"], "system directory")):
        with pytest.raises(UsageError, match=text):
            BamqlServer(session, allow_files=bad)


# -- the CLI ----------------------------------------------------------------------------------
def test_bamql_serve_refuses_to_listen_beyond_localhost_without_a_token(taxi_store, capsys,
                                                                        monkeypatch):
    monkeypatch.delenv("BAMQL_SERVER_TOKEN", raising=False)
    for host in ("0.0.0.0", "::", "192.0.2.1", "example.com"):
        assert not loopback(host)
        assert main(["serve", str(taxi_store), "--host", host, "--device", "cpu"]) == 1
        err = capsys.readouterr().err
        assert err == (f"bamql: error: listening on {host} lets anyone who reaches the port "
                       "query: give --token (or set BAMQL_SERVER_TOKEN), or --insecure to serve "
                       "without one\n")
    assert all(loopback(h) for h in ("127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"))


def test_bamql_serve_passes_insecure_tokens_and_roots(taxi_store, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("BAMQL_SERVER_TOKEN", raising=False)
    got = []

    def fake(session, say, **kw):
        got.append(kw)
        session.close()

    monkeypatch.setattr(server_module, "serve", fake)
    assert main(["serve", str(taxi_store), "--host", "0.0.0.0", "--insecure", "--device", "cpu",
                 "--allow-files", str(tmp_path), "."]) == 0
    assert "note: --insecure" in capsys.readouterr().err
    assert got[-1]["host"] == "0.0.0.0" and got[-1]["token"] is None
    assert list(got[-1]["allow_files"]) == [tmp_path.resolve(), Path.cwd().resolve()]
    assert main(["serve", str(taxi_store), "--host", "0.0.0.0", "--token", "t", "--device",
                 "cpu"]) == 0
    assert got[-1]["token"] == "t" and got[-1]["allow_files"] is None
    # the bare --allow-files of old is refused with a hint
    assert main(["serve", str(taxi_store), "--device", "cpu", "--allow-files"]) == 1
    assert capsys.readouterr().err == (
        "bamql: error: --allow-files takes the directories whose files queries may read: bamql "
        "serve DIR --allow-files FILES_DIR ... (. for the current one)\n")
    assert main(["serve", str(taxi_store), "--device", "cpu", "--allow-files", "/proc"]) == 1
    assert "system directory" in capsys.readouterr().err


@pytest.mark.slow  # in CI's slow run: each round compiles kernels
def test_queries_stopped_at_any_point_leave_the_answers_right(make_server, session):
    """Queries interrupted at random points (planning, compiling, reading, aggregating):
    the server's next answers are the session's."""
    import random

    from tests.reference import assert_same_rows

    rng = random.Random(41)
    cols = ["fare_amount", "trip_distance", "tip_amount", "tolls_amount", "total_amount"]
    keys = ["vendor_id", "passenger_count", "payment_type", "store_and_fwd_flag"]

    def query() -> str:
        a, b = rng.sample(cols, 2)
        k, c = rng.choice(keys), rng.uniform(0, 20)
        return rng.choice([
            f"SELECT COUNT(*), SUM({a}), MIN({b}) FROM trips WHERE {a} > {c:.2f}",
            f"SELECT {k}, COUNT(*), AVG({a}) FROM trips WHERE {b} > {c:.2f} GROUP BY 1 ORDER BY 1",
            f"SELECT {a}, {b} FROM trips WHERE {a} > {c:.2f} ORDER BY {a} DESC, {b} LIMIT 5",
            f"SELECT COUNT(DISTINCT {k}), MAX({a} * {b}) FROM trips WHERE {a} > {c:.1f}"])

    srv = make_server(server_query_timeout=0)
    with bamql.connect(srv.url) as r:
        for _ in range(12):
            q = query()
            srv.queries.timeout = rng.choice([0.001, 0.01, 0.05, 0.2])
            try:
                r.sql(q)
            except ServerError as e:
                assert "ran past" in str(e)
            srv.queries.timeout = None
            start = time.monotonic()
            while srv.queries.running() and time.monotonic() - start < 30:
                time.sleep(0.01)
            assert srv.queries.running() == 0
            assert_same_rows(r.sql(q).rows(), session.sql(q).rows(), True)



def test_an_adbc_client_meets_the_limits_as_one_line_errors(make_server, session):
    """The limits reach an ADBC Flight SQL client as DB-API errors of one line: SQL length
    and nesting as the client's mistake (ProgrammingError), time as the server's
    (OperationalError, in time); the connection goes on."""
    dbapi = pytest.importorskip("adbc_driver_flightsql.dbapi")
    deep = "SELECT COUNT(*) FROM trips WHERE " + "(" * 201 + "fare_amount > 0" + ")" * 201
    cases = [(dict(server_max_sql=100),
              "SELECT COUNT(*) FROM trips WHERE " + "fare_amount > 1 AND " * 10 + "true",
              dbapi.ProgrammingError, r"INVALID_ARGUMENT: .*this server takes at most 100 "
                                      r"\(BAMQL_SERVER_MAX_SQL\)"),
             ({}, deep, dbapi.ProgrammingError,
              r"INVALID_ARGUMENT: .*nests parentheses 201 deep.*\(BAMQL_SERVER_MAX_NESTING\)"),
             (dict(server_query_timeout=0.5), _or_chain(40_000), dbapi.OperationalError,
              r"TIMEOUT: .*past this server's limit of 0.5 s \(BAMQL_SERVER_QUERY_TIMEOUT\)")]
    for limits, sql, err, text in cases:
        srv = make_server(**limits)
        with dbapi.connect(srv.url, autocommit=True) as conn:
            with conn.cursor() as cur, pytest.raises(err, match=text) as e:
                start = time.monotonic()
                cur.execute(sql)
            assert time.monotonic() - start < 5
            _one_line(e.value)
            with conn.cursor() as cur:
                cur.execute("SELECT COUNT(*) FROM trips")
                assert cur.fetchall() == _rows(session)
