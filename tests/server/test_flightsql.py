"""bamql serve as an Arrow Flight SQL server: the message codec, the protocol through a plain
Flight client, and an ADBC Flight SQL client (where adbc_driver_flightsql is installed)."""

from __future__ import annotations

import datetime
import shutil
import subprocess
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.flight as fl
import pytest
from google.protobuf import any_pb2

import bamql
from bamql.config import Config
from bamql.errors import BamqlError, UsageError
from bamql.server import flight as server_module
from bamql.server import flightsql
from bamql.server.flight import BamqlServer
from bamql.server.proto import Flight_pb2 as flight_pb2
from bamql.server.proto import FlightSql_pb2 as pb
from tests.reference import assert_same_rows, normalize

# -- the messages -----------------------------------------------------------------------------
_URL = b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery"
PROTO = Path(flightsql.__file__).parent / "proto"

#: messages and their bytes, worked out by hand from the protobuf encoding rules
HAND = [
    (pb.CommandStatementQuery(query="SELECT 1"), b"\x0a\x08SELECT 1"),
    (pb.CommandGetSqlInfo(info=[0, 1, 504]), b"\x0a\x04\x00\x01\xf8\x03"),
    (pb.CommandGetTables(table_name_filter_pattern="tr%", table_types=["TABLE"],
                         include_schema=True), b"\x1a\x03tr%\x22\x05TABLE\x28\x01"),
    (pb.DoPutUpdateResult(record_count=-1), b"\x08" + b"\xff" * 9 + b"\x01"),
    (pb.TicketStatementQuery(statement_handle=b"\x00" * 130), b"\x0a\x82\x01" + b"\x00" * 130),
    (pb.CommandGetCatalogs(), b""),
    (pb.CommandGetDbSchemas(catalog=""), b"\x0a\x00"),  # an optional field set to ""
]


@pytest.mark.parametrize("msg, data", HAND)
def test_messages_encode_and_decode_as_worked_out_by_hand(msg, data):
    assert msg.SerializeToString(deterministic=True) == data
    assert flightsql.parse(type(msg), data) == msg


def test_any_wraps_a_message_and_plain_commands_are_no_flight_sql():
    msg = pb.CommandStatementQuery(query="SELECT 1")
    packed = flightsql.pack(msg)
    assert len(_URL) == 0x43
    assert packed == b"\x0a\x43" + _URL + b"\x12\x0a\x0a\x08SELECT 1"
    assert flightsql.unpack(packed) == msg
    assert flightsql.unpack(b'{"sql": "SELECT 1", "params": null}') is None
    assert flightsql.unpack(b"held:0123") is None
    assert flightsql.unpack(b"") is None


def test_optional_fields_keep_their_absence():
    assert flightsql.optional(pb.CommandGetTables(), "catalog") is None
    assert flightsql.optional(flightsql.unpack(flightsql.pack(pb.CommandGetTables(catalog=""))),
                              "catalog") == ""
    assert not flightsql.unpack(flightsql.pack(pb.CommandStatementQuery(query="x"))).HasField(
        "transaction_id")


def test_unknown_fields_are_stepped_over():
    extra = b"\x49" + b"\x01" * 8 + b"\x55" + b"\x02" * 4 + b"\x58\x96\x01"  # fields 9, 10, 11
    msg = flightsql.parse(pb.CommandStatementQuery, extra + b"\x0a\x01x")
    assert msg.query == "x" and not msg.HasField("transaction_id")
    assert list(flightsql.parse(pb.CommandGetSqlInfo, b"\x08\x03\x08\x04\x0a\x01\x05").info) == [
        3, 4, 5]


@pytest.mark.parametrize("data", [b"\x0a\x08SELE", b"\x0a", b"\x80", b"\x0b",
                                  b"\x08" + b"\xff" * 11, b"\x0a\x02\xff\xfe"])
def test_malformed_messages_are_one_line(data):
    with pytest.raises(UsageError, match="Flight SQL CommandStatementQuery is malformed"):
        flightsql.parse(pb.CommandStatementQuery, data)
    wrapped = any_pb2.Any(type_url=flightsql.PREFIX + "CommandStatementQuery", value=data)
    with pytest.raises(UsageError, match="malformed"):
        flightsql.unpack(wrapped.SerializeToString())


def test_a_flight_sql_message_bamql_does_not_serve_is_named():
    for name in ["CommandStatementSubstraitPlan", "CommandStatementIngest", "NoSuchMessage"]:
        wrapped = any_pb2.Any(type_url=flightsql.PREFIX + name)
        with pytest.raises(UsageError, match=f"does not serve Flight SQL's {name}"):
            flightsql.unpack(wrapped.SerializeToString())


def test_the_generated_code_is_of_the_committed_proto_files():
    """Each message and enum the .proto files declare is in the generated module (the note
    in bamql/server/proto says how to make it again), and every message bamql serves."""
    import re

    for proto, module in [("FlightSql.proto", pb), ("Flight.proto", flight_pb2)]:
        text = (PROTO / proto).read_text()
        declared = set(re.findall(r"^(?:message|enum) (\w+)", text, re.MULTILINE))
        generated = {*module.DESCRIPTOR.message_types_by_name,
                     *module.DESCRIPTOR.enum_types_by_name}
        assert declared == generated, proto
        assert module.DESCRIPTOR.package == re.search(r"^package ([\w.]+);", text, re.M).group(1)
    assert flightsql.SERVED <= set(pb.DESCRIPTOR.message_types_by_name)
    assert "apache-arrow-25.0.1" in (PROTO / "__init__.py").read_text()


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


def _cmd(msg) -> fl.FlightDescriptor:
    return fl.FlightDescriptor.for_command(flightsql.pack(msg))


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
    info = c.get_flight_info(_cmd(pb.CommandStatementQuery(query=SQL)))
    ticket = info.endpoints[0].ticket
    assert isinstance(flightsql.unpack(ticket.ticket), pb.TicketStatementQuery)
    t = c.do_get(ticket).read_all()
    assert_same_rows([tuple(r.values()) for r in t.to_pylist()], _duck(SQL, None, taxi_table), True)
    with pytest.raises(pa.ArrowKeyError, match="spent or unknown"):  # a ticket is good once
        c.do_get(ticket).read_all()
    with pytest.raises(pa.ArrowInvalid, match="PlanError: unknown column 'nope'"):
        c.get_flight_info(_cmd(pb.CommandStatementQuery(query="SELECT nope FROM trips")))
    empty = _fetch(c, _cmd(pb.CommandStatementQuery(query="SELECT COUNT(*), SUM(fare_amount) "
                                                          "FROM trips WHERE fare_amount > 1e9")))
    assert empty.to_pylist() == [dict(zip(empty.column_names, r, strict=True))
                                 for r in _duck("SELECT COUNT(*), SUM(fare_amount) FROM trips "
                                                "WHERE fare_amount > 1e9", None, taxi_table)]
    c.close()


def _prepare(c: fl.FlightClient, sql: str) -> pb.ActionCreatePreparedStatementResult:
    req = flightsql.pack(pb.ActionCreatePreparedStatementRequest(query=sql))
    [res] = list(c.do_action(fl.Action("CreatePreparedStatement", req)))
    return flightsql.unpack_as(pb.ActionCreatePreparedStatementResult, res.body.to_pybytes())


def test_prepared_statements_bind_parameters_by_do_put(server, taxi_table):
    c = fl.FlightClient(server.url)
    sql = "SELECT COUNT(*), AVG(fare_amount) FROM trips WHERE trip_distance > ? AND vendor_id = ?"
    made = _prepare(c, sql)
    assert made.dataset_schema == b"" and not made.is_update  # known once the parameters are
    handle = made.prepared_statement_handle
    desc = _cmd(pb.CommandPreparedStatementQuery(prepared_statement_handle=handle))
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
    with pytest.raises(pa.ArrowInvalid, match="one row of parameters"):
        w.close()
    c.do_action(fl.Action("ClosePreparedStatement", flightsql.pack(
        pb.ActionClosePreparedStatementRequest(prepared_statement_handle=handle))))
    with pytest.raises(pa.ArrowKeyError, match="no such prepared statement"):
        c.get_flight_info(desc)
    c.close()


def test_a_prepared_statement_without_parameters_runs_once_for_its_schema(server, session,
                                                                          monkeypatch):
    """Its answer's schema comes with the prepared statement: the query runs when prepared
    and its answer is held for the first execution; the next runs again."""
    runs = []
    execute = server._execute
    monkeypatch.setattr(server, "_execute", lambda *a: runs.append(a) or execute(*a))
    c = fl.FlightClient(server.url)
    made = _prepare(c, SQL)
    schema = pa.ipc.read_schema(pa.py_buffer(made.dataset_schema))
    assert len(runs) == 1 and schema == session.sql(SQL).table.schema
    desc = _cmd(pb.CommandPreparedStatementQuery(
        prepared_statement_handle=made.prepared_statement_handle))
    assert c.get_schema(desc).schema == schema and len(runs) == 1
    first = _fetch(c, desc)
    assert len(runs) == 1 and first.schema.equals(schema, check_metadata=True)
    assert _fetch(c, desc).equals(first) and len(runs) == 2
    c.close()


def test_get_schema_of_a_statement_holds_its_answer_for_the_execution(server, session,
                                                                      monkeypatch):
    runs = []
    execute = server._execute
    monkeypatch.setattr(server, "_execute", lambda *a: runs.append(a) or execute(*a))
    c = fl.FlightClient(server.url)
    desc = _cmd(pb.CommandStatementQuery(query=SQL))
    schema = c.get_schema(desc).schema
    assert schema == session.sql(SQL).table.schema and len(runs) == 1
    assert c.get_schema(desc).schema.equals(schema, check_metadata=True) and len(runs) == 1
    t = _fetch(c, desc)
    assert t.schema.equals(schema, check_metadata=True) and len(runs) == 1
    _fetch(c, desc)
    assert len(runs) == 2  # held once: the next execution runs again
    with pytest.raises(pa.ArrowInvalid, match="^.*PlanError: unknown table 'nosuch'"):
        c.get_schema(_cmd(pb.CommandStatementQuery(query="SELECT * FROM nosuch")))
    c.close()


def test_answers_carry_flight_sql_column_metadata(server):
    c = fl.FlightClient(server.url)
    t = _fetch(c, _cmd(pb.CommandStatementQuery(
        query="SELECT vendor_id, pickup_datetime, fare_amount, CAST(fare_amount AS DECIMAL(9,2)) "
              "AS d, CAST(vendor_id AS VARCHAR) AS s FROM trips LIMIT 3")))
    meta = {f.name: {k.decode().removeprefix("ARROW:FLIGHT:SQL:"): v.decode()
                     for k, v in f.metadata.items()} for f in t.schema}
    assert {n: m["TYPE_NAME"] for n, m in meta.items()} == {
        "vendor_id": "BIGINT", "pickup_datetime": "TIMESTAMP", "fare_amount": "DOUBLE",
        "d": "DECIMAL(9,2)", "s": "VARCHAR"}
    assert (meta["d"]["PRECISION"], meta["d"]["SCALE"]) == ("9", "2")
    assert (meta["pickup_datetime"]["PRECISION"], meta["pickup_datetime"]["SCALE"]) == ("26", "6")
    assert meta["vendor_id"]["PRECISION"] == "19" and meta["fare_amount"]["PRECISION"] == "53"
    assert "PRECISION" not in meta["s"] and meta["s"]["IS_CASE_SENSITIVE"] == "1"
    assert all(m["IS_READ_ONLY"] == "1" and m["IS_AUTO_INCREMENT"] == "0" for m in meta.values())
    c.close()


def test_updates_and_transactions_are_refused(server):
    c = fl.FlightClient(server.url)
    w, _ = c.do_put(_cmd(pb.CommandStatementUpdate(query="DELETE FROM trips")), pa.schema([]))
    with pytest.raises(pa.ArrowInvalid, match="bamql is read-only"):
        w.close()
    with pytest.raises(pa.ArrowInvalid, match="no transactions"):
        c.get_flight_info(_cmd(pb.CommandStatementQuery(query="SELECT 1", transaction_id=b"t")))
    with pytest.raises(pa.ArrowInvalid, match="does not serve Flight SQL's Command"):
        c.get_flight_info(_cmd(pb.CommandStatementSubstraitPlan()))
    c.close()


def test_catalog_commands(server, session):
    c = fl.FlightClient(server.url)
    t = _fetch(c, _cmd(pb.CommandGetTables(include_schema=True)))
    assert t.column("table_name").to_pylist() == session.tables() == ["trips"]
    assert t.column("table_type").to_pylist() == ["TABLE"]
    assert t.column("db_schema_name").to_pylist() == [""]
    schema = pa.ipc.read_schema(pa.py_buffer(t.column("table_schema")[0].as_py()))
    assert schema == session.schema("trips")
    assert schema.field("fare_amount").metadata[b"ARROW:FLIGHT:SQL:TABLE_NAME"] == b"trips"
    assert schema.field("fare_amount").metadata[b"storage"] == (
        session.schema("trips").field("fare_amount").metadata[b"storage"])
    for none in [{"table_name_filter_pattern": "zones"}, {"catalog": "main"},
                 {"db_schema_filter_pattern": "public"}, {"table_types": ["VIEW"]}]:
        assert _fetch(c, _cmd(pb.CommandGetTables(**none))).num_rows == 0, none
    assert _fetch(c, _cmd(pb.CommandGetTables(table_name_filter_pattern="tr_p%",
                                              db_schema_filter_pattern="%", catalog=""))).num_rows == 1
    assert _fetch(c, _cmd(pb.CommandGetCatalogs())).num_rows == 0
    assert _fetch(c, _cmd(pb.CommandGetDbSchemas())).to_pylist() == [
        {"catalog_name": None, "db_schema_name": ""}]
    assert _fetch(c, _cmd(pb.CommandGetDbSchemas(catalog="main"))).num_rows == 0
    assert _fetch(c, _cmd(pb.CommandGetTableTypes())).to_pylist() == [{"table_type": "TABLE"}]
    assert _fetch(c, _cmd(pb.CommandGetPrimaryKeys(table="trips"))).num_rows == 0
    assert _fetch(c, _cmd(pb.CommandGetCrossReference(pk_table="trips", fk_table="trips"))
                  ).schema == flightsql.FOREIGN_KEYS_SCHEMA
    info = _fetch(c, _cmd(pb.CommandGetSqlInfo(info=[0, 3, 8, 9999])))
    assert info.schema == flightsql.SQL_INFO_SCHEMA
    assert info.to_pylist() == [{"info_name": 0, "value": "bamql"},
                                {"info_name": 3, "value": True},
                                {"info_name": 8, "value": 0}]
    assert _fetch(c, _cmd(pb.CommandGetSqlInfo())).num_rows == len(flightsql.sql_info("x"))
    c.close()


def test_xdbc_type_info_lists_the_types_of_tables_and_answers(server, session):
    c = fl.FlightClient(server.url)
    t = _fetch(c, _cmd(pb.CommandGetXdbcTypeInfo()))
    assert t.schema == flightsql.XDBC_TYPE_INFO_SCHEMA
    rows = t.to_pylist()
    assert [(r["data_type"], r["type_name"]) for r in rows] == sorted(
        (r["data_type"], r["type_name"]) for r in rows)
    names = {r["type_name"] for r in rows}
    assert {flightsql.type_name(f.type) for f in session.schema("trips")} <= names
    [ts] = _fetch(c, _cmd(pb.CommandGetXdbcTypeInfo(data_type=pb.XDBC_TIMESTAMP))).to_pylist()[:1]
    assert ts["sql_data_type"] == pb.XDBC_DATETIME and ts["datetime_subcode"] == (
        pb.XDBC_SUBCODE_TIMESTAMP)
    assert _fetch(c, _cmd(pb.CommandGetXdbcTypeInfo(data_type=pb.XDBC_BINARY))).num_rows == 0
    c.close()


def test_session_options_through_a_plain_flight_client(server):
    c = fl.FlightClient(server.url)

    def action(kind, msg, cls):
        [res] = list(c.do_action(fl.Action(kind, msg.SerializeToString())))
        return flightsql.parse(cls, res.body.to_pybytes())

    got = action("GetSessionOptions", flight_pb2.GetSessionOptionsRequest(),
                 flight_pb2.GetSessionOptionsResult)
    assert {k: v.string_value for k, v in got.session_options.items()} == {"catalog": "",
                                                                          "schema": ""}
    req = flight_pb2.SetSessionOptionsRequest()
    req.session_options["schema"].string_value = ""
    req.session_options["catalog"].string_value = "main"
    req.session_options["nope"].bool_value = True
    got = action("SetSessionOptions", req, flight_pb2.SetSessionOptionsResult)
    S = flight_pb2.SetSessionOptionsResult
    assert {k: v.value for k, v in got.errors.items()} == {"catalog": S.INVALID_VALUE,
                                                         "nope": S.INVALID_NAME}
    got = action("CloseSession", flight_pb2.CloseSessionRequest(), flight_pb2.CloseSessionResult)
    assert got.status == flight_pb2.CloseSessionResult.CLOSED
    with pytest.raises(pa.ArrowInvalid, match="SetSessionOptionsRequest is malformed"):
        list(c.do_action(fl.Action("SetSessionOptions", b"\x0a\x05")))
    c.close()


def test_answers_on_the_real_sample_are_the_sessions(sample_store):
    """Flight SQL passes a session's answer through whole: schema, NULLs and all."""
    sql = ("SELECT payment_type, COUNT(*), AVG(congestion_surcharge), MIN(passenger_count) "
           "FROM trips GROUP BY 1 ORDER BY 1")
    with bamql.connect(sample_store, device="cpu") as s:
        srv = BamqlServer(s)
        try:
            c = fl.FlightClient(srv.url)
            got = _fetch(c, _cmd(pb.CommandStatementQuery(query=sql)))
            c.close()
            assert got.equals(s.sql(sql).table) and got.schema == s.sql(sql).table.schema
        finally:
            srv.shutdown()


def test_plain_flight_commands_still_work(server, session):
    from bamql.api import wire
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


#: SQL errors: the client's own (INVALID_ARGUMENT), ProgrammingError in ADBC
BAD_SQL = [("SELEC COUNT(*) FROM trips", "SQL syntax error"),
           ("SELECT COUNT(*) FROM nosuch", "unknown table 'nosuch'"),
           ("SELECT nope FROM trips", "unknown column 'nope'"),
           ("SELECT COUNT(*) FROM trips WHERE fare_amount > ?", "parameter placeholders")]


@pytest.mark.parametrize("sql, text", BAD_SQL)
def test_an_adbc_client_sees_sql_errors_as_programming_errors(sql, text, server, session):
    dbapi = _adbc()
    with dbapi.connect(server.url, autocommit=True) as conn:
        with conn.cursor() as cur, pytest.raises(dbapi.ProgrammingError) as e:
            cur.execute(sql)
        msg = str(e.value)
        assert msg.startswith("INVALID_ARGUMENT: ") and text in msg, msg
        assert "\n" not in msg and "Traceback" not in msg, msg
        with conn.cursor() as cur, pytest.raises(dbapi.ProgrammingError, match=text):
            cur.adbc_statement.set_sql_query(sql)  # a statement not prepared: GetFlightInfo
            cur.adbc_statement.execute_query()
        with conn.cursor() as cur:  # and the connection goes on
            cur.execute("SELECT COUNT(*) FROM trips")
            assert cur.fetchall() == [(session.store("trips").rows,)]


@pytest.mark.parametrize("sql, text", BAD_SQL)
def test_bamqls_client_sees_sql_errors_as_their_classes(sql, text, server, session):
    """bamql's own client tells the classes apart from the message (INVALID_ARGUMENT
    carries no extra_info): the same class and line as the session's own error."""
    with pytest.raises(BamqlError) as local:
        session.sql(sql)
    with bamql.connect(server.url) as remote, pytest.raises(type(local.value)) as e:
        remote.sql(sql)
    assert str(e.value) == str(local.value) and text in str(e.value)


def test_an_adbc_client_sees_spent_handles_as_not_found(server):
    dbapi = _adbc()
    with dbapi.connect(server.url, autocommit=True) as conn, conn.cursor() as cur:
        cur.adbc_prepare("SELECT COUNT(*) FROM trips WHERE fare_amount > ?")
        c = fl.FlightClient(server.url)  # the statement is closed behind the cursor's back
        for handle in list(server._prepared):
            c.do_action(fl.Action("ClosePreparedStatement", flightsql.pack(
                pb.ActionClosePreparedStatementRequest(prepared_statement_handle=handle))))
        c.close()
        with pytest.raises(dbapi.ProgrammingError, match="^NOT_FOUND: .*no such prepared"):
            cur.execute("SELECT COUNT(*) FROM trips WHERE fare_amount > ?", (1.0,))


def test_an_adbc_client_refused_an_update_sees_one_line(server):
    dbapi = _adbc()
    with dbapi.connect(server.url, autocommit=True) as conn:
        with conn.cursor() as cur, pytest.raises(dbapi.ProgrammingError,
                                                 match="bamql is read-only"):
            cur.adbc_statement.set_sql_query("DELETE FROM trips")
            cur.adbc_statement.execute_update()


def test_an_adbc_client_has_a_current_catalog_and_schema(server):
    dbapi = _adbc()
    with dbapi.connect(server.url, autocommit=True) as conn:
        assert conn.adbc_current_catalog == "" and conn.adbc_current_db_schema == ""
        conn.adbc_current_db_schema = ""  # the ones it has: taken
        conn.adbc_current_catalog = ""
        for attr in ("adbc_current_catalog", "adbc_current_db_schema"):
            with pytest.raises(dbapi.ProgrammingError, match="invalid value"):
                setattr(conn, attr, "main")
        assert conn.adbc_current_db_schema == ""
    # closing the connection closed its session (CloseSession) without an error


def _describe(session) -> dict[str, str]:
    return {r["column_name"]: r["column_type"]
            for r in session.sql("DESCRIBE trips").table.to_pylist()}


def test_an_adbc_client_lists_tables_and_columns_with_their_sql_types(server, session):
    dbapi = _adbc()
    with dbapi.connect(server.url, autocommit=True) as conn:
        objects = conn.adbc_get_objects().read_all().to_pylist()
        [catalog] = objects
        [schema] = catalog["catalog_db_schemas"]
        [table] = schema["db_schema_tables"]
        assert (catalog["catalog_name"], schema["db_schema_name"], table["table_name"],
                table["table_type"]) == ("", "", "trips", "TABLE")
        cols = table["table_columns"]
        assert [c["column_name"] for c in cols] == session.schema("trips").names
        assert {c["column_name"]: c["xdbc_type_name"] for c in cols} == _describe(session)
        assert [c["ordinal_position"] for c in cols] == list(range(1, len(cols) + 1))
        assert all(c["xdbc_is_autoincrement"] is False for c in cols)
        # bamql's tables lie in no catalog: ADBC names it "" where it lists what lies in it
        assert conn.adbc_get_objects(depth="catalogs").read_all().num_rows == 0
        got = conn.adbc_get_objects(depth="db_schemas").read_all().to_pylist()
        assert [s["db_schema_name"] for s in got[0]["catalog_db_schemas"]] == [""]
        assert not got[0]["catalog_db_schemas"][0]["db_schema_tables"]
        [t] = conn.adbc_get_objects(depth="tables").read_all().to_pylist()[0][
            "catalog_db_schemas"][0]["db_schema_tables"]
        assert t["table_name"] == "trips" and not t["table_columns"]
        none = conn.adbc_get_objects(table_name_filter="zones%").read_all().to_pylist()
        assert not any(s["db_schema_tables"] for c in none for s in c["catalog_db_schemas"])
        some = conn.adbc_get_objects(column_name_filter="fare%").read_all().to_pylist()
        cols = some[0]["catalog_db_schemas"][0]["db_schema_tables"][0]["table_columns"]
        assert [c["column_name"] for c in cols] == ["fare_amount"]

        ts = conn.adbc_get_table_schema("trips")
        assert ts == session.schema("trips")
        assert {f.name: f.metadata[b"ARROW:FLIGHT:SQL:TYPE_NAME"].decode() for f in ts} == (
            _describe(session))
        with pytest.raises(dbapi.ProgrammingError):  # NOT_FOUND
            conn.adbc_get_table_schema("nosuch")
        assert conn.adbc_get_table_types() == ["TABLE"]


def test_an_adbc_client_gets_the_servers_info(server):
    dbapi = _adbc()
    with dbapi.connect(server.url, autocommit=True) as conn:
        info = conn.adbc_get_info()
    assert info["vendor_name"] == "bamql" and info["vendor_arrow_version"] == pa.__version__
    assert info["vendor_version"] == (server_module._version() or "unknown")


def test_an_adbc_client_gets_a_querys_schema(server, session, monkeypatch):
    """execute_schema: through a prepared statement (the DB-API cursor's way) and through
    GetSchema of a statement; the answer's columns carry their SQL types."""
    dbapi = _adbc()
    runs = []
    execute = server._execute
    monkeypatch.setattr(server, "_execute", lambda *a: runs.append(a) or execute(*a))
    want = session.sql(SQL).table.schema
    with dbapi.connect(server.url, autocommit=True) as conn:
        with conn.cursor() as cur:
            got = cur.adbc_execute_schema(SQL)
            assert got == want and len(runs) == 1
            assert [f.metadata[b"ARROW:FLIGHT:SQL:TYPE_NAME"] for f in got] == [
                b"BIGINT", b"BIGINT", b"DOUBLE", b"TIMESTAMP"]
            cur.execute(SQL)  # the same statement: its answer held since it ran for the schema
            t = cur.fetch_arrow_table()
            assert len(runs) == 1 and t.schema.equals(got, check_metadata=True)
        with conn.cursor() as cur:
            cur.adbc_statement.set_sql_query(SQL)
            assert pa.schema(cur.adbc_statement.execute_schema()) == want
        with conn.cursor() as cur, pytest.raises(dbapi.ProgrammingError,
                                                 match="unknown column 'nope'"):
            cur.adbc_execute_schema("SELECT nope FROM trips")
        with conn.cursor() as cur, pytest.raises(dbapi.NotSupportedError):
            # a query with parameters: its schema is known only once they are bound
            cur.adbc_execute_schema("SELECT COUNT(*) FROM trips WHERE fare_amount > ?")


def test_an_adbc_clients_answers_carry_their_sql_types(server):
    dbapi = _adbc()
    with dbapi.connect(server.url, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute("SELECT vendor_id, AVG(fare_amount) AS f FROM trips WHERE fare_amount > ? "
                    "GROUP BY 1", (5.0,))
        t = cur.fetch_arrow_table()
    assert [f.metadata[b"ARROW:FLIGHT:SQL:TYPE_NAME"] for f in t.schema] == [b"BIGINT",
                                                                            b"DOUBLE"]


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
