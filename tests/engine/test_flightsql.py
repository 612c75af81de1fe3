"""bamql serve as an Arrow Flight SQL server: the message codec, the protocol through a plain
Flight client, and an ADBC Flight SQL client (where adbc_driver_flightsql is installed)."""

from __future__ import annotations

import datetime
import shutil
import subprocess

import duckdb
import pyarrow as pa
import pyarrow.flight as fl
import pytest

import bamql
from bamql.config import Config
from bamql.engine import flightsql, protowire
from bamql.engine.flightsql import Kind, Message
from bamql.engine.server import BamqlServer
from bamql.errors import UsageError
from tests.reference import assert_same_rows, normalize

# -- the codec -------------------------------------------------------------------------------
_URL = b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery"

#: messages and their bytes, worked out by hand from the protobuf encoding rules
HAND = [
    (Message(Kind.STATEMENT_QUERY, {"query": "SELECT 1"}), b"\x0a\x08SELECT 1"),
    (Message(Kind.GET_SQL_INFO, {"info": [0, 1, 504]}), b"\x0a\x04\x00\x01\xf8\x03"),
    (Message(Kind.GET_TABLES, {"table_name_filter_pattern": "tr%", "table_types": ["TABLE"],
                               "include_schema": True}),
     b"\x1a\x03tr%\x22\x05TABLE\x28\x01"),
    (Message(Kind.UPDATE_RESULT, {"record_count": -1}), b"\x08" + b"\xff" * 9 + b"\x01"),
    (Message(Kind.TICKET, {"statement_handle": b"\x00" * 130}), b"\x0a\x82\x01" + b"\x00" * 130),
    (Message(Kind.GET_CATALOGS, {}), b""),
]


@pytest.mark.parametrize("msg, data", HAND)
def test_messages_encode_and_decode_as_worked_out_by_hand(msg, data):
    assert flightsql.encode(msg) == data
    assert flightsql.decode(msg.kind, data) == msg


def test_any_wraps_a_message_and_plain_commands_are_no_flight_sql():
    msg = Message(Kind.STATEMENT_QUERY, {"query": "SELECT 1"})
    packed = flightsql.pack(msg)
    assert len(_URL) == 0x43
    assert packed == b"\x0a\x43" + _URL + b"\x12\x0a\x0a\x08SELECT 1"
    assert flightsql.unpack(packed) == msg
    assert flightsql.unpack(b'{"sql": "SELECT 1", "params": null}') is None
    assert flightsql.unpack(b"held:0123") is None
    assert flightsql.unpack(b"") is None


def test_the_decoder_steps_over_unknown_fields_and_takes_unpacked_repeats():
    extra = b"\x49" + b"\x01" * 8 + b"\x55" + b"\x02" * 4 + b"\x58\x96\x01"  # fields 9, 10, 11
    assert flightsql.decode(Kind.STATEMENT_QUERY, extra + b"\x0a\x01x") == Message(
        Kind.STATEMENT_QUERY, {"query": "x"})
    assert flightsql.decode(Kind.GET_SQL_INFO, b"\x08\x03\x08\x04\x0a\x01\x05").get("info") == [
        3, 4, 5]


@pytest.mark.parametrize("data", [b"\x0a\x08SELE", b"\x0a", b"\x80", b"\x0b", b"\x08" + b"\xff" * 11])
def test_malformed_messages_are_one_line(data):
    with pytest.raises(UsageError, match="Flight SQL"):
        flightsql.decode(Kind.STATEMENT_QUERY, data)


def test_a_flight_sql_message_bamql_does_not_serve_is_named():
    any_ = protowire.field(1, flightsql.PREFIX + "CommandGetXdbcTypeInfo")
    with pytest.raises(UsageError, match="CommandGetXdbcTypeInfo"):
        flightsql.unpack(any_)


def test_the_codec_agrees_with_protobuf():
    """Where protobuf is installed: the same messages, built from a descriptor of the spec's
    fields, serialize to the same bytes."""
    pytest.importorskip("google.protobuf")
    from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory

    fdp = descriptor_pb2.FileDescriptorProto(name="fsql_test.proto",
                                             package="arrow.flight.protocol.sql", syntax="proto3")
    F = descriptor_pb2.FieldDescriptorProto
    kinds = {flightsql.FieldType.STRING: F.TYPE_STRING, flightsql.FieldType.BYTES: F.TYPE_BYTES,
             flightsql.FieldType.BOOL: F.TYPE_BOOL, flightsql.FieldType.INT: F.TYPE_INT64,
             flightsql.FieldType.STRINGS: F.TYPE_STRING, flightsql.FieldType.UINTS: F.TYPE_UINT32}
    for kind, spec in flightsql.FIELDS.items():
        m = fdp.message_type.add(name=kind.value)
        for name, (number, ftype) in spec.items():
            rep = ftype in (flightsql.FieldType.STRINGS, flightsql.FieldType.UINTS)
            m.field.add(name=name, number=number, type=kinds[ftype],
                        label=F.LABEL_REPEATED if rep else F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    for msg, _ in HAND + [(Message(Kind.CREATE_PREPARED_RESULT, {
            "prepared_statement_handle": b"prep:1", "dataset_schema": b"\x01\x02"}), None)]:
        cls = message_factory.GetMessageClass(
            pool.FindMessageTypeByName(f"arrow.flight.protocol.sql.{msg.kind.value}"))
        pb = cls(**msg.values)
        assert flightsql.encode(msg) == pb.SerializeToString(deterministic=True)
        assert flightsql.decode(msg.kind, pb.SerializeToString()) == msg
        wrapped = any_pb2.Any()
        wrapped.Pack(pb)
        assert flightsql.unpack(wrapped.SerializeToString()) == msg
        assert flightsql.pack(msg) == wrapped.SerializeToString(deterministic=True)


def test_like_patterns():
    assert flightsql.like(None, "trips") and flightsql.like("%", "") and flightsql.like("t_ip%", "trips")
    assert not flightsql.like("trip", "trips") and not flightsql.like("T%", "trips")
    assert flightsql.like("a.b", "a.b") and not flightsql.like("a.b", "axb")


# -- the protocol through a plain Flight client ----------------------------------------------
@pytest.fixture(scope="module")
def session(taxi_store):
    with bamql.connect(taxi_store, device="cpu") as s:
        yield s


@pytest.fixture(scope="module")
def server(session):
    srv = BamqlServer(session)
    yield srv
    srv.shutdown()


def _duck(sql: str, params, table) -> list[tuple]:
    con = duckdb.connect()
    con.register("trips", normalize(table))
    return con.execute(sql, params).fetchall()


def _cmd(kind: Kind, **values) -> fl.FlightDescriptor:
    return fl.FlightDescriptor.for_command(flightsql.pack(Message(kind, values)))


def _fetch(client: fl.FlightClient, desc: fl.FlightDescriptor) -> pa.Table:
    info = client.get_flight_info(desc)
    [ep] = info.endpoints
    t = client.do_get(ep.ticket).read_all()
    assert t.schema == info.schema and info.total_records == t.num_rows
    return t


SQL = ("SELECT passenger_count, COUNT(*), SUM(tip_amount), MIN(pickup_datetime) FROM trips "
       "WHERE trip_distance > 2.5 GROUP BY passenger_count ORDER BY passenger_count")


def test_a_statement_query_answers_as_duckdb(server, taxi_table):
    c = fl.FlightClient(server.url)
    info = c.get_flight_info(_cmd(Kind.STATEMENT_QUERY, query=SQL))
    ticket = info.endpoints[0].ticket
    assert flightsql.unpack(ticket.ticket).kind is Kind.TICKET
    t = c.do_get(ticket).read_all()
    assert_same_rows([tuple(r.values()) for r in t.to_pylist()], _duck(SQL, None, taxi_table), True)
    with pytest.raises(fl.FlightServerError, match="spent or unknown"):  # a ticket is good once
        c.do_get(ticket).read_all()
    with pytest.raises(fl.FlightServerError, match="PlanError: unknown column 'nope'"):
        c.get_flight_info(_cmd(Kind.STATEMENT_QUERY, query="SELECT nope FROM trips"))
    empty = _fetch(c, _cmd(Kind.STATEMENT_QUERY, query="SELECT COUNT(*), SUM(fare_amount) "
                                                        "FROM trips WHERE fare_amount > 1e9"))
    assert empty.to_pylist() == [dict(zip(empty.column_names, r, strict=True))
                                 for r in _duck("SELECT COUNT(*), SUM(fare_amount) FROM trips "
                                                "WHERE fare_amount > 1e9", None, taxi_table)]
    c.close()


def test_prepared_statements_bind_parameters_by_do_put(server, taxi_table):
    c = fl.FlightClient(server.url)
    sql = "SELECT COUNT(*), AVG(fare_amount) FROM trips WHERE trip_distance > ? AND vendor_id = ?"
    req = flightsql.pack(Message(Kind.CREATE_PREPARED, {"query": sql}))
    [res] = list(c.do_action(fl.Action("CreatePreparedStatement", req)))
    handle = flightsql.unpack(res.body.to_pybytes()).get("prepared_statement_handle")
    desc = _cmd(Kind.PREPARED_QUERY, prepared_statement_handle=handle)
    for dist, vendor in [(1.5, 1), (3.0, 2)]:
        batch = pa.record_batch([pa.array([dist]), pa.array([vendor])], names=["0", "1"])
        w, _ = c.do_put(desc, batch.schema)
        w.write_batch(batch)
        w.close()
        got = [tuple(r.values()) for r in _fetch(c, desc).to_pylist()]
        assert_same_rows(got, _duck(sql, [dist, vendor], taxi_table), True)
    two = pa.record_batch([pa.array([1.0, 2.0]), pa.array([1, 2])], names=["0", "1"])
    w, _ = c.do_put(desc, two.schema)
    w.write_batch(two)
    with pytest.raises(fl.FlightServerError, match="one row of parameters"):
        w.close()
    c.do_action(fl.Action("ClosePreparedStatement", flightsql.pack(
        Message(Kind.CLOSE_PREPARED, {"prepared_statement_handle": handle}))))
    with pytest.raises(fl.FlightServerError, match="no such prepared statement"):
        c.get_flight_info(desc)
    c.close()


def test_updates_and_transactions_are_refused(server):
    c = fl.FlightClient(server.url)
    w, _ = c.do_put(_cmd(Kind.STATEMENT_UPDATE, query="DELETE FROM trips"), pa.schema([]))
    with pytest.raises(fl.FlightServerError, match="bamql is read-only"):
        w.close()
    with pytest.raises(fl.FlightServerError, match="no transactions"):
        c.get_flight_info(_cmd(Kind.STATEMENT_QUERY, query="SELECT 1", transaction_id=b"t"))
    with pytest.raises(fl.FlightServerError, match="does not serve Flight SQL's Command"):
        c.get_flight_info(_cmd(Kind.SUBSTRAIT_PLAN))
    c.close()


def test_catalog_commands(server, session):
    c = fl.FlightClient(server.url)
    t = _fetch(c, _cmd(Kind.GET_TABLES, include_schema=True))
    assert t.column("table_name").to_pylist() == session.tables() == ["trips"]
    assert t.column("table_type").to_pylist() == ["TABLE"]
    assert t.column("db_schema_name").to_pylist() == [""]
    assert pa.ipc.read_schema(pa.py_buffer(t.column("table_schema")[0].as_py())) == (
        session.schema("trips"))
    for none in [{"table_name_filter_pattern": "zones"}, {"catalog": "main"},
                 {"db_schema_filter_pattern": "public"}, {"table_types": ["VIEW"]}]:
        assert _fetch(c, _cmd(Kind.GET_TABLES, **none)).num_rows == 0, none
    assert _fetch(c, _cmd(Kind.GET_TABLES, table_name_filter_pattern="tr_p%",
                          db_schema_filter_pattern="%", catalog="")).num_rows == 1
    assert _fetch(c, _cmd(Kind.GET_CATALOGS)).num_rows == 0
    assert _fetch(c, _cmd(Kind.GET_DB_SCHEMAS)).to_pylist() == [
        {"catalog_name": None, "db_schema_name": ""}]
    assert _fetch(c, _cmd(Kind.GET_TABLE_TYPES)).to_pylist() == [{"table_type": "TABLE"}]
    assert _fetch(c, _cmd(Kind.GET_PRIMARY_KEYS, table="trips")).num_rows == 0
    info = _fetch(c, _cmd(Kind.GET_SQL_INFO, info=[0, 3, 8, 9999]))
    assert info.schema == flightsql.SQL_INFO_SCHEMA
    assert info.to_pylist() == [{"info_name": 0, "value": "bamql"},
                                {"info_name": 3, "value": True},
                                {"info_name": 8, "value": 0}]
    assert _fetch(c, _cmd(Kind.GET_SQL_INFO)).num_rows == len(flightsql.SqlInfo)
    c.close()


def test_answers_on_the_real_sample_are_the_sessions(sample_store):
    """Flight SQL passes a session's answer through whole: schema, NULLs and all."""
    sql = ("SELECT payment_type, COUNT(*), AVG(congestion_surcharge), MIN(passenger_count) "
           "FROM trips GROUP BY 1 ORDER BY 1")
    with bamql.connect(sample_store, device="cpu") as s:
        srv = BamqlServer(s)
        try:
            c = fl.FlightClient(srv.url)
            got = _fetch(c, _cmd(Kind.STATEMENT_QUERY, query=sql))
            c.close()
            assert got.equals(s.sql(sql).table) and got.schema == s.sql(sql).table.schema
        finally:
            srv.shutdown()


def test_plain_flight_commands_still_work(server, session):
    from bamql.engine import wire

    c = fl.FlightClient(server.url)
    cmd = wire.encode_command("SELECT COUNT(*) FROM trips")
    assert c.do_get(fl.Ticket(cmd)).read_all().column(0).to_pylist() == [session.store("trips").rows]
    info = c.get_flight_info(fl.FlightDescriptor.for_command(cmd))
    assert c.do_get(info.endpoints[0].ticket).read_all().num_rows == 1
    c.close()


# -- an ADBC client --------------------------------------------------------------------------
def _adbc():
    return pytest.importorskip("adbc_driver_flightsql.dbapi")


QUERIES = [
    (SQL, None),
    ("SELECT payment_type, COUNT(*), AVG(total_amount) FROM trips WHERE fare_amount >= ? "
     "GROUP BY 1 ORDER BY 1", (5.0,)),
    ("SELECT COUNT(*), MAX(pickup_datetime) FROM trips WHERE pickup_datetime >= ?",
     (datetime.datetime(2019, 6, 1),)),
    ("SELECT SUM(trip_distance) FROM trips WHERE fare_amount > ? AND vendor_id = ?", (1e9, 1)),
]


@pytest.mark.parametrize("sql, params", QUERIES)
def test_an_adbc_client_gets_duckdbs_answers(sql, params, server, taxi_table):
    dbapi = _adbc()
    with dbapi.connect(server.url, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(sql, params)
        got = [tuple(r.values()) for r in cur.fetch_arrow_table().to_pylist()]
    assert_same_rows(got, _duck(sql, list(params) if params else None, taxi_table), True)


def test_an_adbc_client_sees_errors_tables_and_info(server, session):
    dbapi = _adbc()
    with dbapi.connect(server.url, autocommit=True) as conn:
        with conn.cursor() as cur, pytest.raises(dbapi.Error, match="unknown column 'nope'"):
            cur.execute("SELECT nope FROM trips")
        with conn.cursor() as cur, pytest.raises(dbapi.Error, match="bamql is read-only"):
            cur.adbc_statement.set_sql_query("DELETE FROM trips")
            cur.adbc_statement.execute_update()
        assert conn.adbc_get_info()["vendor_name"] == "bamql"
        assert conn.adbc_get_table_schema("trips").names == session.schema("trips").names
        objects = conn.adbc_get_objects().read_all().to_pylist()
        tables = [t["table_name"] for c in objects for s in c["catalog_db_schemas"]
                  for t in s["db_schema_tables"]]
        assert tables == ["trips"]


def test_an_adbc_client_passes_the_token(session, monkeypatch):
    dbapi = _adbc()
    monkeypatch.delenv("BAMQL_SERVER_TOKEN", raising=False)
    srv = BamqlServer(session, token="s3cret")
    try:
        kw = {"adbc.flight.sql.authorization_header": "Bearer s3cret"}
        with dbapi.connect(srv.url, db_kwargs=kw, autocommit=True) as conn, conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM trips")
            assert cur.fetchall() == [(session.store("trips").rows,)]
        with pytest.raises(dbapi.Error, match="token"):
            with dbapi.connect(srv.url, autocommit=True) as conn, conn.cursor() as cur:
                cur.execute("SELECT COUNT(*) FROM trips")
    finally:
        srv.shutdown()


def test_an_adbc_client_sees_the_servers_limits_as_its_error_classes(session):
    """A refused request is INVALID_ARGUMENT (ProgrammingError), a query past its time
    DEADLINE_EXCEEDED (OperationalError): each one line, without a traceback."""
    dbapi = _adbc()
    deep = "SELECT COUNT(*) FROM trips WHERE " + "(" * 201 + "fare_amount > 0" + ")" * 201
    long = "SELECT COUNT(*) FROM trips WHERE " + " OR ".join(["fare_amount = 1"] * 300)
    slow = "SELECT COUNT(*) FROM trips WHERE " + " OR ".join(  # seconds of planning
        f"fare_amount = {i}" for i in range(40_000))
    cases = [(Config(server_max_sql=4096), deep, dbapi.ProgrammingError, "INVALID_ARGUMENT",
              "BAMQL_SERVER_MAX_NESTING"),
             (Config(server_max_sql=4096), long, dbapi.ProgrammingError, "INVALID_ARGUMENT",
              "BAMQL_SERVER_MAX_SQL"),
             (Config(server_query_timeout=0.5), slow, dbapi.OperationalError, "TIMEOUT",
              "BAMQL_SERVER_QUERY_TIMEOUT")]
    for config, sql, cls, code, text in cases:
        srv = BamqlServer(session, config=config)
        try:
            with dbapi.connect(srv.url, autocommit=True) as conn:
                with conn.cursor() as cur, pytest.raises(cls) as e:
                    cur.execute(sql)
                msg = str(e.value)
                assert msg.startswith(f"{code}: ") and text in msg, msg
                assert "\n" not in msg and "Traceback" not in msg, msg
                with conn.cursor() as cur:  # and the server goes on
                    cur.execute("SELECT COUNT(*) FROM trips")
                    assert cur.fetchall() == [(session.store("trips").rows,)]
        finally:
            srv.shutdown()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
def test_an_adbc_client_over_tls(session, tmp_path):
    dbapi = _adbc()
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    srv = BamqlServer(session, tls=(cert.read_bytes(), key.read_bytes()))
    try:
        kw = {"adbc.flight.sql.client_option.tls_root_certs": cert.read_text()}
        with dbapi.connect(srv.url, db_kwargs=kw, autocommit=True) as conn, conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM trips WHERE fare_amount > ?", (10.0,))
            assert cur.fetchall() == session.sql(
                "SELECT COUNT(*) FROM trips WHERE fare_amount > 10.0").rows()
    finally:
        srv.shutdown()
