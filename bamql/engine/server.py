"""``bamql serve``: one warm session shared by many clients over Arrow Flight.

The server speaks plain Arrow Flight (see ``bamql.engine.wire`` for the messages):

- ``do_get(ticket)``: the ticket is a command (JSON ``{"sql", "params"}``); the answer
  streams back as Arrow record batches. One round trip per query.
- ``get_flight_info(command descriptor)``: runs the query and holds its answer for one
  ``do_get`` of the ticket it returns (the flow of generic Flight clients).
- ``list_flights``: one flight per table (its path, schema and row count).
- ``do_action``: ``health``, ``tables``, ``schema``, ``explain`` (``wire.ACTIONS``).

It also speaks Arrow Flight SQL (``bamql.engine.flightsql``), for ADBC and JDBC clients:
statements (GetFlightInfo of CommandStatementQuery, then DoGet of its ticket), prepared
statements with parameters bound by DoPut, and the catalog commands. bamql is read-only:
an update is refused with one line.

A query's bamql error reaches the client as a Flight error carrying its one-line message
and class; any other failure is logged here and reported as one line, and the server goes
on. With a token, every call must carry ``authorization: Bearer <token>``.
"""

from __future__ import annotations

import argparse
import hmac
import json
import logging
import re
import secrets
import signal
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.flight as fl

from bamql.engine import flightsql, wire
from bamql.engine.flightsql import Kind, Message
from bamql.engine.result import Result
from bamql.engine.session import Session
from bamql.errors import BamqlError, PlanError, UsageError

log = logging.getLogger("bamql.server")

_EXPLAIN = re.compile(r"^\s*explain\s+(analyze\s+)?", re.IGNORECASE)
#: answers of get_flight_info held for their do_get (the oldest go first)
_HELD = 64
#: open Flight SQL prepared statements (the oldest are closed first)
_PREPARED = 1024
#: the Flight SQL actions a bamql server takes
FLIGHT_SQL_ACTIONS = {
    "CreatePreparedStatement": "Flight SQL: prepare a query (ActionCreatePreparedStatementRequest)",
    "ClosePreparedStatement": "Flight SQL: close a prepared statement",
}
_READ_ONLY = "bamql is read-only: it answers queries, not updates"


@dataclass(frozen=True)
class _Prepared:
    """A Flight SQL prepared statement: its query and the parameters bound to it."""

    sql: str
    params: list[object] | None = None


class _TokenCheck(fl.ServerMiddlewareFactory):
    """Refuses every call that does not carry ``authorization: Bearer <token>``."""

    def __init__(self, token: str) -> None:
        self._want = f"Bearer {token}".encode()

    def start_call(self, info, headers):
        got = [v for k, vs in headers.items() if k.lower() == "authorization" for v in vs]
        if not got:
            raise fl.FlightUnauthenticatedError("this bamql server needs a token "
                                                "(authorization: Bearer <token>)")
        value = got[0].encode() if isinstance(got[0], str) else got[0]
        if not hmac.compare_digest(value, self._want):
            raise fl.FlightUnauthenticatedError("wrong token for this bamql server")
        return None


class BamqlServer(fl.FlightServerBase):
    """An Arrow Flight server over one Session; it listens from construction on.

    Parameters
    ----------
    session
        The session every client shares (thread-safe); the server does not close it.
    host, port
        Where to listen; port 0 picks a free port (``self.port`` says which).
    token
        If given, the bearer token every call must carry.
    tls
        ``(certificate PEM, private key PEM)`` bytes: listen with TLS (``grpc+tls://``).
    allow_files
        Whether queries may name files in FROM (they read the server's file system); off,
        such a query is a PlanError.
    """

    def __init__(self, session: Session, host: str = "127.0.0.1", port: int = 0,
                 token: str | None = None, tls: tuple[bytes, bytes] | None = None,
                 allow_files: bool = False) -> None:
        scheme = "grpc+tls" if tls else "grpc"
        middleware = {"auth": _TokenCheck(token)} if token else {}
        certs = [fl.CertKeyPair(cert=tls[0], key=tls[1])] if tls else []
        super().__init__(f"{scheme}://{host}:{port}", tls_certificates=certs,
                         middleware=middleware)
        self.session = session
        self.allow_files = allow_files
        self.url = f"{scheme}://{host}:{self.port}"
        self._held: OrderedDict[bytes, Result | pa.Table] = OrderedDict()
        self._prepared: OrderedDict[bytes, _Prepared] = OrderedDict()
        self._lock = threading.Lock()

    # -- queries -----------------------------------------------------------------------------
    def _check_files(self, text: str) -> None:
        """Refuse a query that names files in FROM unless the server allows them."""
        if self.allow_files:
            return
        from bamql.planner.files import bind_files

        def refuse(ref) -> str:
            raise PlanError(f"this server answers queries over its tables only, not files "
                            f"({', '.join(ref.specs)}); bamql serve --allow-files serves them")

        m = _EXPLAIN.match(text)
        bind_files(text[m.end():] if m else text, self.session.stores, refuse)

    def _run(self, command: bytes) -> Result:
        text, params = wire.decode_command(command)
        self._check_files(text)
        return self.session.sql(text, params)

    def _answer(self, command: bytes) -> pa.Table:
        return wire.result_table(self._run(command))

    def do_get(self, context, ticket):
        return _guard(self._do_get, ticket)

    def _do_get(self, ticket):
        msg = flightsql.unpack(ticket.ticket)
        if msg is not None:
            return fl.RecordBatchStream(self._take(msg))
        with self._lock:
            held = self._held.pop(ticket.ticket, None)
        if isinstance(held, pa.Table):  # a Flight SQL answer is fetched by its own ticket
            raise UsageError("this ticket is no bamql command")
        t = wire.result_table(held) if held is not None else self._answer(ticket.ticket)
        return fl.RecordBatchStream(t)

    def _hold(self, answer: Result | pa.Table) -> bytes:
        """Keep an answer for one do_get; its handle."""
        handle = b"held:" + secrets.token_hex(16).encode()
        with self._lock:
            self._held[handle] = answer
            while len(self._held) > _HELD:
                self._held.popitem(last=False)
        return handle

    def get_flight_info(self, context, descriptor):
        return _guard(self._get_flight_info, descriptor)

    def _get_flight_info(self, descriptor):
        if descriptor.descriptor_type != fl.DescriptorType.CMD:
            name = self._path_name(descriptor)
            return self._table_info(name)
        msg = flightsql.unpack(descriptor.command)
        if msg is not None:
            t = self._flight_sql(msg)
            ticket = flightsql.pack(Message(Kind.TICKET, {"statement_handle": self._hold(t)}))
        else:
            res = self._run(descriptor.command)
            ticket = self._hold(res)
            t = wire.result_table(res)
        return fl.FlightInfo(t.schema, descriptor, [fl.FlightEndpoint(ticket, [])],
                             t.num_rows, t.nbytes)

    def get_schema(self, context, descriptor):
        return _guard(self._get_schema, descriptor)

    def _get_schema(self, descriptor):
        if descriptor.descriptor_type == fl.DescriptorType.CMD:
            msg = flightsql.unpack(descriptor.command)
            if msg is not None:
                return fl.SchemaResult(self._flight_sql(msg).schema)
            return fl.SchemaResult(self._answer(descriptor.command).schema)
        return fl.SchemaResult(self.session.schema(self._path_name(descriptor)))

    # -- the catalog -------------------------------------------------------------------------
    @staticmethod
    def _path_name(descriptor) -> str:
        if len(descriptor.path) != 1:
            raise UsageError("a path descriptor names one table")
        return descriptor.path[0].decode()

    def _table_info(self, name: str) -> fl.FlightInfo:
        store = self.session.store(name)
        return fl.FlightInfo(self.session.schema(name), fl.FlightDescriptor.for_path(name), [],
                             store.rows, -1)

    def list_flights(self, context, criteria):
        return _guard(lambda: [self._table_info(n) for n in self.session.tables()])

    def list_actions(self, context):
        return list(wire.ACTIONS.items()) + list(FLIGHT_SQL_ACTIONS.items())

    def do_action(self, context, action):
        return _guard(self._do_action, action)

    def _do_action(self, action) -> list[bytes]:
        kind, body = action.type, action.body.to_pybytes() if action.body else b""
        s = self.session
        if kind in FLIGHT_SQL_ACTIONS:
            return self._flight_sql_action(kind, body)
        if kind == "health":
            out = {"status": "ok", "path": str(s.path) if s.path is not None else None,
                   "device": str(s.device), "backend": str(s.backend), "tables": s.tables(),
                   "version": _version()}
        elif kind == "tables":
            out = [{"name": n, "rows": s.store(n).rows, "page_size": s.store(n).page_size}
                   for n in s.tables()]
        elif kind == "schema":
            return [s.schema(body.decode()).serialize().to_pybytes()]
        elif kind == "explain":
            text, params = wire.decode_command(body)
            self._check_files(text)
            return [s.explain(text, params).encode()]
        else:
            raise UsageError(f"unknown action {kind!r} (actions: "
                             f"{', '.join([*wire.ACTIONS, *FLIGHT_SQL_ACTIONS])})")
        return [json.dumps(out).encode()]

    # -- Flight SQL --------------------------------------------------------------------------
    def _query(self, text: str, params: list[object] | None) -> pa.Table:
        self._check_files(text)
        return self.session.sql(text, params).table

    def _flight_sql(self, msg: Message) -> pa.Table:
        """The answer to a Flight SQL command of GetFlightInfo or GetSchema."""
        k = msg.kind
        if msg.get("transaction_id") is not None:
            raise UsageError("bamql has no transactions (it is read-only)")
        if k is Kind.STATEMENT_QUERY:
            return self._query(str(msg.get("query", "")), None)
        if k is Kind.PREPARED_QUERY:
            p = self._statement(msg)
            return self._query(p.sql, p.params)
        if k is Kind.GET_SQL_INFO:
            return flightsql.sql_info_table(msg.get("info", []), _version() or "unknown")
        if k is Kind.GET_CATALOGS:
            return flightsql.catalogs_table()
        if k is Kind.GET_DB_SCHEMAS:
            return flightsql.db_schemas_table(msg)
        if k is Kind.GET_TABLE_TYPES:
            return flightsql.table_types_table()
        if k is Kind.GET_TABLES:
            s = self.session
            return flightsql.tables_table(msg, {n: s.schema(n) for n in s.tables()})
        if k in (Kind.GET_PRIMARY_KEYS, Kind.GET_EXPORTED_KEYS, Kind.GET_IMPORTED_KEYS):
            return flightsql.keys_table(k)
        if k in (Kind.STATEMENT_UPDATE, Kind.PREPARED_UPDATE):
            raise UsageError(_READ_ONLY)
        raise UsageError(f"a Flight SQL {k.value} is no command of GetFlightInfo")

    def _take(self, msg: Message) -> pa.Table:
        """The answer a Flight SQL ticket holds (once)."""
        if msg.kind is not Kind.TICKET:
            raise UsageError(f"a Flight SQL {msg.kind.value} is no ticket (GetFlightInfo "
                             "gives one)")
        with self._lock:
            held = self._held.pop(bytes(msg.get("statement_handle", b"")), None)
        if not isinstance(held, pa.Table):
            raise UsageError("this Flight SQL ticket is spent or unknown: ask GetFlightInfo again")
        return held

    def _statement(self, msg: Message) -> _Prepared:
        handle = bytes(msg.get("prepared_statement_handle", b""))
        with self._lock:
            p = self._prepared.get(handle)
            if p is not None:
                self._prepared.move_to_end(handle)
        if p is None:
            raise UsageError("no such prepared statement (it was closed, or the server "
                             "restarted)")
        return p

    def _flight_sql_action(self, kind: str, body: bytes) -> list[bytes]:
        msg = flightsql.unpack(body)
        want = Kind.CREATE_PREPARED if kind == "CreatePreparedStatement" else Kind.CLOSE_PREPARED
        if msg is None or msg.kind is not want:
            raise UsageError(f"the {kind} action takes a Flight SQL {want.value}")
        if msg.kind is Kind.CLOSE_PREPARED:
            with self._lock:
                self._prepared.pop(bytes(msg.get("prepared_statement_handle", b"")), None)
            return []
        if msg.get("transaction_id") is not None:
            raise UsageError("bamql has no transactions (it is read-only)")
        handle = b"prep:" + secrets.token_hex(16).encode()
        with self._lock:
            self._prepared[handle] = _Prepared(str(msg.get("query", "")))
            while len(self._prepared) > _PREPARED:
                self._prepared.popitem(last=False)
        # the answer's schema is known only once the parameters are: none is sent here
        res = Message(Kind.CREATE_PREPARED_RESULT, {"prepared_statement_handle": handle})
        return [flightsql.pack(res)]

    def do_put(self, context, descriptor, reader, writer):
        return _guard(self._do_put, descriptor, reader)

    def _do_put(self, descriptor, reader) -> None:
        msg = (flightsql.unpack(descriptor.command)
               if descriptor.descriptor_type == fl.DescriptorType.CMD else None)
        if msg is None:
            raise UsageError("bamql takes DoPut only to bind a Flight SQL prepared statement's "
                             "parameters")
        if msg.kind in (Kind.STATEMENT_UPDATE, Kind.PREPARED_UPDATE):
            raise UsageError(_READ_ONLY)
        if msg.kind is not Kind.PREPARED_QUERY:
            raise UsageError(f"bamql takes no DoPut of a Flight SQL {msg.kind.value}")
        p = self._statement(msg)
        t = reader.read_all()
        if t.num_rows != 1:
            raise UsageError(f"bamql binds one row of parameters to a query, not {t.num_rows}")
        params = [col[0].as_py() for col in t.columns]
        handle = bytes(msg.get("prepared_statement_handle", b""))
        with self._lock:
            if handle in self._prepared:
                self._prepared[handle] = _Prepared(p.sql, params)


def _version() -> str | None:
    """bamql's version, or None when it runs from a source tree."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bamql")
    except PackageNotFoundError:
        return None


def _guard(fn: Callable, *args):
    """``fn(*args)``, its failures as Flight errors of one line: a bamql error with its class,
    any other one logged here (with its traceback) and reported as an internal error."""
    try:
        return fn(*args)
    except fl.FlightError:
        raise
    except BamqlError as e:
        msg, info = wire.error_info(e)
        raise fl.FlightServerError(msg, extra_info=info) from None
    except Exception as e:
        log.exception("a call failed")
        first = (str(e).strip().splitlines() or [""])[0]
        raise fl.FlightInternalError(f"internal error: {type(e).__name__}: {first}") from None


# -- bamql serve -----------------------------------------------------------------------------
def serve(session: Session, say: Callable[[str], None], stop: threading.Event | None = None,
          **server) -> None:
    """Serve ``session`` until SIGINT or SIGTERM (or ``stop`` is set), then finish the calls
    in flight and close the session.

    Parameters
    ----------
    session
        The session to share.
    say
        Prints the readiness and shutdown lines.
    stop
        An event that also stops the server (signals set it).
    **server
        :class:`BamqlServer`'s keywords (host, port, token, tls, allow_files).
    """
    stop = stop or threading.Event()
    try:
        srv = BamqlServer(session, **server)
    except pa.ArrowException:  # gRPC says why on stderr; the usual cause is a port in use
        session.close()
        raise UsageError(f"cannot listen on {server.get('host', '127.0.0.1')}:"
                         f"{server.get('port', 0)} (the port in use, or TLS files that are no "
                         "certificate and key?)") from None
    except BaseException:
        session.close()
        raise
    old = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        where = session.path if session.path is not None else "files only"
        auth = "token required" if server.get("token") else "no token"
        say(f"serving {where} on {srv.url} ({session.device}, {auth}, "
            f"tables: {', '.join(session.tables()) or 'none'})")
        while not stop.wait(0.5):
            pass
        say("stopping: finishing the queries in flight")
        srv.shutdown()  # returns once the calls in flight have finished
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
        session.close()
    say("stopped")


def cmd_serve(a: argparse.Namespace) -> int:
    from bamql.config import Config
    from bamql.engine.session import connect

    token = a.token or Config.from_env().server_token
    if bool(a.tls_cert) != bool(a.tls_key):
        raise UsageError("TLS takes both --tls-cert and --tls-key")
    tls = None
    if a.tls_cert:
        try:
            tls = (Path(a.tls_cert).read_bytes(), Path(a.tls_key).read_bytes())
        except OSError as e:
            raise UsageError(f"cannot read the TLS certificate or key: {e}") from None
    if a.host not in ("127.0.0.1", "localhost", "::1") and not token:
        print("bamql: note: listening beyond localhost without a token: anyone who reaches "
              "the port can query", file=sys.stderr)
    s = connect(a.data, device=a.device, backend=a.backend, cache=a.cache,
                cache_files=a.cache_files)
    if s.note:
        print(f"bamql: {s.note}", file=sys.stderr)
    serve(s, lambda m: print(f"bamql: {m}", file=sys.stderr, flush=True), host=a.host,
          port=a.port, token=token, tls=tls, allow_files=a.allow_files)
    return 0
