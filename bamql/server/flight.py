"""``bamql serve``: one warm session shared by many clients over Arrow Flight.

The server speaks plain Arrow Flight (see ``bamql.api.wire`` for the messages):

- ``do_get(ticket)``: the ticket is a command (JSON ``{"sql", "params"}``); the answer
  streams back as Arrow record batches. One round trip per query.
- ``get_flight_info(command descriptor)``: runs the query and holds its answer for one
  ``do_get`` of the ticket it returns (the flow of generic Flight clients).
- ``list_flights``: one flight per table (its path, schema and row count).
- ``do_action``: ``health``, ``tables``, ``schema``, ``explain`` (``wire.ACTIONS``).

It also speaks Arrow Flight SQL (``bamql.server.flightsql``), for ADBC and JDBC clients:
statements (GetFlightInfo of CommandStatementQuery, then DoGet of its ticket; GetSchema of
one runs it and holds its answer for the GetFlightInfo that follows), prepared statements
(one without parameters runs when prepared, for its answer's schema, and its answer is held
for its first execution; parameters are bound by DoPut), the catalog commands with each
column's SQL type in its metadata, GetXdbcTypeInfo, and the session options (the current
catalog and schema, both ``""``). bamql is read-only: an update is refused with one line.

Limits (``bamql.config``: ``BAMQL_SERVER_*``) keep one client from starving the others: the
size of a request (ticket, command, action body, DoPut parameters), the length of a
query's SQL, how deeply its parentheses (or a command's JSON) nest, the time one query runs
and how many run at once. A request beyond a size or nesting limit is refused before it is
parsed (INVALID_ARGUMENT); a query past its time (DEADLINE_EXCEEDED) is interrupted: it runs
in a thread of its own, which the server stops at its next Python step with an exception
(as Ctrl-C stops a query in ``bamql shell``), while a kernel already launched finishes its
batch first and its result is dropped; until the thread has stopped it counts against the
queries that may run at once, beyond which a query is answered UNAVAILABLE at once.

Every error a client sees is one line, without a traceback, a path of the server's install
or its process id, and its gRPC status says whose it is: a query's bamql error as its class
and message, ``Class: message`` (a PlanError, UsageError or OutOfRangeError, the client's
own: INVALID_ARGUMENT, which ADBC raises as ProgrammingError; a ticket or prepared statement
the server does not hold: NOT_FOUND; any other, the server's: UNKNOWN, its class in
``extra_info``), a query past its time DEADLINE_EXCEEDED, one beyond the queries at once
UNAVAILABLE, a wrong token UNAUTHENTICATED, any other failure logged here and reported as
``internal error: ...`` (INTERNAL), and the server goes on. With a token, every call must carry
``authorization: Bearer <token>``. Files in FROM are read only under the directories the
server is given (``allow_files``), by their real paths, symlinks resolved.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import os
import re
import secrets
import signal
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.flight as fl

from bamql.api import wire
from bamql.api.session import Session
from bamql.config import Config
from bamql.errors import PlanError, UsageError
from bamql.exec.result import Result
from bamql.server import flightsql
from bamql.server.errors import NotFound, Refused, Unsupported, guard, one_line_details
from bamql.server.limits import Runner, json_nesting, quiet_lost_interrupts, sql_nesting
from bamql.server.proto import Flight_pb2 as flight_pb2
from bamql.server.proto import FlightSql_pb2 as pb
from bamql.server.roots import FileRoots
from bamql.sql.params import _has_placeholders as has_placeholders

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
    "GetSessionOptions": "Flight: the session's options (its current catalog and schema)",
    "SetSessionOptions": "Flight: set session options (only to the values they have)",
    "CloseSession": "Flight: close the session (a bamql server keeps none per client)",
}
_READ_ONLY = "bamql is read-only: it answers queries, not updates"


@dataclass(frozen=True)
class _Prepared:
    """A Flight SQL prepared statement: its query, the parameters bound to it, and the
    handle of its answer where it was run when prepared (held for its first execution)."""

    sql: str
    params: list[object] | None = None
    held: bytes | None = None


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
        The directories whose files queries may name in FROM (:class:`FileRoots`: a file
        is read only where its real path lies in one of them); None: no files, such a
        query is a PlanError.
    config
        The limits (``server_max_ticket``, ``server_max_sql``, ``server_max_nesting``,
        ``server_query_timeout``, ``server_max_queries``); None: ``Config.from_env()``.
    """

    def __init__(self, session: Session, host: str = "127.0.0.1", port: int = 0,
                 token: str | None = None, tls: tuple[bytes, bytes] | None = None,
                 allow_files: Sequence[str | os.PathLike] | None = None,
                 config: Config | None = None) -> None:
        self.files = FileRoots(allow_files) if allow_files not in (None, False) else None
        self.config = config if config is not None else Config.from_env()
        one_line_details()
        quiet_lost_interrupts()
        scheme = "grpc+tls" if tls else "grpc"
        middleware = {"auth": _TokenCheck(token)} if token else {}
        certs = [fl.CertKeyPair(cert=tls[0], key=tls[1])] if tls else []
        super().__init__(f"{scheme}://{host}:{port}", tls_certificates=certs,
                         middleware=middleware)
        self.session = session
        self.url = f"{scheme}://{host}:{self.port}"
        self.queries = Runner(self.config.server_query_timeout, self.config.server_max_queries)
        self._held: OrderedDict[bytes, Result | pa.Table] = OrderedDict()
        self._prepared: OrderedDict[bytes, _Prepared] = OrderedDict()
        self._lock = threading.Lock()

    # -- limits ------------------------------------------------------------------------------
    def _request(self, data: bytes, what: str) -> bytes:
        """``data`` of a request, refused beyond the size the server reads."""
        most = self.config.server_max_ticket
        if len(data) > most:
            raise Refused(f"UsageError: {what} is {len(data):,} bytes; this server reads "
                           f"at most {most:,} (BAMQL_SERVER_MAX_TICKET)")
        return data

    def _check_sql(self, text: str) -> str:
        """A query's text, refused beyond the length or the nesting the server takes."""
        size, most = len(text.encode("utf-8", "surrogatepass")), self.config.server_max_sql
        if size > most:
            raise Refused(f"PlanError: the query is {size:,} bytes of SQL; this server "
                           f"takes at most {most:,} (BAMQL_SERVER_MAX_SQL)")
        depth, most = sql_nesting(text), self.config.server_max_nesting
        if depth > most:
            raise Refused(f"PlanError: the query nests parentheses {depth} deep; this "
                           f"server takes at most {most} (BAMQL_SERVER_MAX_NESTING)")
        return text

    def _command(self, data: bytes) -> tuple[str, object]:
        """The query and parameters of a command (JSON), within the server's limits."""
        self._request(data, "the command")
        depth, most = json_nesting(data), self.config.server_max_nesting
        if depth > most:
            raise Refused(f"UsageError: the command's JSON nests {depth} deep; this "
                           f"server takes at most {most} (BAMQL_SERVER_MAX_NESTING)")
        text, params = wire.decode_command(data)
        return self._check_sql(text), params

    # -- queries -----------------------------------------------------------------------------
    def _check_files(self, text: str) -> None:
        """Refuse a query that names files in FROM beyond the server's directories (any
        file, where it serves none)."""
        from bamql.sql.file_refs import bind_files

        def refuse(ref) -> str:
            if self.files is None:
                raise PlanError(f"this server answers queries over its tables only, not files "
                                f"({', '.join(ref.specs)}); bamql serve --allow-files DIR "
                                "serves the files under DIR")
            for spec in ref.specs:
                self.files.check(spec)
            return "files"

        m = _EXPLAIN.match(text)
        bind_files(text[m.end():] if m else text, self.session.stores, refuse)

    def _execute(self, text: str, params) -> Result:
        self._check_files(text)
        return self.session.sql(text, params)

    def _run(self, command: bytes) -> Result:
        text, params = self._command(command)
        return self.queries.run(self._execute, text, params)

    def _answer(self, command: bytes) -> pa.Table:
        return wire.result_table(self._run(command))

    def do_get(self, context, ticket):
        return guard(self._do_get, ticket)

    def _do_get(self, ticket):
        self._request(ticket.ticket, "the ticket")
        msg = flightsql.unpack(ticket.ticket)
        if msg is not None:
            return fl.RecordBatchStream(self._take(msg))
        with self._lock:
            held = self._held.pop(ticket.ticket, None)
        if isinstance(held, pa.Table):  # a Flight SQL answer is fetched by its own ticket
            raise UsageError("this ticket is no bamql command")
        t = wire.result_table(held) if held is not None else self._answer(ticket.ticket)
        return fl.RecordBatchStream(t)

    def _hold(self, answer: Result | pa.Table, handle: bytes | None = None) -> bytes:
        """Keep an answer for one do_get (under ``handle``, else a new one); its handle."""
        handle = handle or b"held:" + secrets.token_hex(16).encode()
        with self._lock:
            self._held[handle] = answer
            while len(self._held) > _HELD:
                self._held.popitem(last=False)
        return handle

    def get_flight_info(self, context, descriptor):
        return guard(self._get_flight_info, descriptor)

    def _descriptor(self, descriptor) -> None:
        """Refuse a descriptor beyond the size the server reads."""
        if descriptor.descriptor_type == fl.DescriptorType.CMD:
            self._request(descriptor.command, "the command")
        else:
            self._request(b"/".join(descriptor.path or []), "the path")

    def _get_flight_info(self, descriptor):
        self._descriptor(descriptor)
        if descriptor.descriptor_type != fl.DescriptorType.CMD:
            name = self._path_name(descriptor)
            return self._table_info(name)
        msg = flightsql.unpack(descriptor.command)
        if msg is not None:
            t = self._flight_sql(msg)
            ticket = flightsql.pack(pb.TicketStatementQuery(statement_handle=self._hold(t)))
        else:
            res = self._run(descriptor.command)
            ticket = self._hold(res)
            t = wire.result_table(res)
        return fl.FlightInfo(t.schema, descriptor, [fl.FlightEndpoint(ticket, [])],
                             t.num_rows, t.nbytes)

    def get_schema(self, context, descriptor):
        return guard(self._get_schema, descriptor, one_line=True)

    def _get_schema(self, descriptor):
        self._descriptor(descriptor)
        if descriptor.descriptor_type == fl.DescriptorType.CMD:
            msg = flightsql.unpack(descriptor.command)
            if msg is not None:
                return fl.SchemaResult(self._flight_sql(msg, keep=True).schema)
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
        return guard(lambda: [self._table_info(n) for n in self.session.tables()])

    def list_actions(self, context):
        return list(wire.ACTIONS.items()) + list(FLIGHT_SQL_ACTIONS.items())

    def do_action(self, context, action):
        return guard(self._do_action, action)

    def _do_action(self, action) -> list[bytes]:
        kind, body = action.type, self._request(action.body.to_pybytes() if action.body else b"",
                                                "the action's body")
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
            text, params = self._command(body)
            return [self.queries.run(self._explain, text, params).encode()]
        else:
            raise UsageError(f"unknown action {kind!r} (actions: "
                             f"{', '.join([*wire.ACTIONS, *FLIGHT_SQL_ACTIONS])})")
        return [json.dumps(out).encode()]

    def _explain(self, text: str, params) -> str:
        self._check_files(text)
        return self.session.explain(text, params)

    # -- Flight SQL --------------------------------------------------------------------------
    def _query(self, text: str, params: list[object] | None) -> pa.Table:
        """A query's answer with its columns' Flight SQL metadata (``ARROW:FLIGHT:SQL:*``)."""
        self._check_sql(text)
        return flightsql.with_column_metadata_table(
            self.queries.run(self._execute, text, params).table)

    def _held_query(self, key: bytes, text: str, params: list[object] | None,
                    keep: bool) -> pa.Table:
        """The answer held under ``key`` (taken, unless ``keep``), else the query's answer
        run now (and held under ``key`` where ``keep``).

        bamql knows a query's schema only by running it: GetSchema of a statement (ADBC's
        ``execute_schema``) and a prepared statement without parameters run the query and
        hold its answer for the GetFlightInfo that executes it (as long as the last
        ``_HELD`` answers are held), so that it runs once."""
        with self._lock:
            t = self._held.get(key) if keep else self._held.pop(key, None)
        if isinstance(t, pa.Table):
            return t
        t = self._query(text, params)
        if keep:
            self._hold(t, key)
        return t

    def _flight_sql(self, msg, keep: bool = False) -> pa.Table:
        """The answer to a Flight SQL command of GetFlightInfo, or (``keep``) of GetSchema,
        whose answer is held for the GetFlightInfo that follows."""
        if isinstance(msg, pb.CommandStatementQuery | pb.CommandStatementUpdate) \
                and msg.HasField("transaction_id"):
            raise UsageError("bamql has no transactions (it is read-only)")
        if isinstance(msg, pb.CommandStatementQuery):
            key = b"statement:" + hashlib.sha256(msg.query.encode("utf-8", "surrogatepass")).digest()
            return self._held_query(key, msg.query, None, keep)
        if isinstance(msg, pb.CommandPreparedStatementQuery):
            p = self._statement(msg)
            if p.held is None:
                return self._query(p.sql, p.params)
            return self._held_query(p.held, p.sql, p.params, keep)
        if isinstance(msg, pb.CommandGetSqlInfo):
            return flightsql.sql_info_table(msg.info, _version() or "unknown")
        if isinstance(msg, pb.CommandGetCatalogs):
            return flightsql.catalogs_table()
        if isinstance(msg, pb.CommandGetDbSchemas):
            return flightsql.db_schemas_table(msg)
        if isinstance(msg, pb.CommandGetTableTypes):
            return flightsql.table_types_table()
        if isinstance(msg, pb.CommandGetTables):
            s = self.session
            return flightsql.tables_table(msg, {n: s.schema(n) for n in s.tables()})
        if isinstance(msg, pb.CommandGetXdbcTypeInfo):
            return flightsql.xdbc_type_info_table(msg)
        if isinstance(msg, pb.CommandGetPrimaryKeys | pb.CommandGetExportedKeys
                      | pb.CommandGetImportedKeys | pb.CommandGetCrossReference):
            return flightsql.keys_table(msg)
        if isinstance(msg, pb.CommandStatementUpdate | pb.CommandPreparedStatementUpdate):
            raise UsageError(_READ_ONLY)
        raise UsageError(f"a Flight SQL {flightsql.name(msg)} is no command of GetFlightInfo")

    def _take(self, msg) -> pa.Table:
        """The answer a Flight SQL ticket holds (once)."""
        if not isinstance(msg, pb.TicketStatementQuery):
            raise UsageError(f"a Flight SQL {flightsql.name(msg)} is no ticket (GetFlightInfo "
                             "gives one)")
        with self._lock:
            held = self._held.pop(msg.statement_handle, None)
        if not isinstance(held, pa.Table):
            raise NotFound("UsageError: this Flight SQL ticket is spent or unknown: ask "
                            "GetFlightInfo again")
        return held

    def _statement(self, msg) -> _Prepared:
        handle = msg.prepared_statement_handle
        with self._lock:
            p = self._prepared.get(handle)
            if p is not None:
                self._prepared.move_to_end(handle)
        if p is None:
            raise NotFound("UsageError: no such prepared statement (it was closed, or the "
                            "server restarted)")
        return p

    def _flight_sql_action(self, kind: str, body: bytes) -> list[bytes]:
        if kind == "GetSessionOptions":
            flightsql.parse(flight_pb2.GetSessionOptionsRequest, body)
            return [flightsql.session_options_result()]
        if kind == "SetSessionOptions":
            return [flightsql.set_session_options(body)]
        if kind == "CloseSession":
            return [flightsql.close_session(body)]
        msg = flightsql.unpack(body)
        want = (pb.ActionCreatePreparedStatementRequest if kind == "CreatePreparedStatement"
                else pb.ActionClosePreparedStatementRequest)
        if not isinstance(msg, want):
            raise UsageError(f"the {kind} action takes a Flight SQL {want.DESCRIPTOR.name}")
        if isinstance(msg, pb.ActionClosePreparedStatementRequest):
            with self._lock:
                p = self._prepared.pop(msg.prepared_statement_handle, None)
                if p is not None and p.held is not None:
                    self._held.pop(p.held, None)
            return []
        if msg.HasField("transaction_id"):
            raise UsageError("bamql has no transactions (it is read-only)")
        handle = b"prep:" + secrets.token_hex(16).encode()
        query = self._check_sql(msg.query)
        res = pb.ActionCreatePreparedStatementResult(prepared_statement_handle=handle,
                                                     is_update=False)
        held = None
        if not has_placeholders(_EXPLAIN.sub("", query, count=1)):
            # its answer's schema is known once it has run: run it now, for its first execution
            held = b"prepared:" + handle
            res.dataset_schema = self._held_query(held, query, None, True).schema.serialize() \
                .to_pybytes()
        # with parameters, the answer's schema is known only once they are: none is sent
        with self._lock:
            self._prepared[handle] = _Prepared(query, None, held)
            while len(self._prepared) > _PREPARED:
                self._prepared.popitem(last=False)
        return [flightsql.pack(res)]

    def do_put(self, context, descriptor, reader, writer):
        return guard(self._do_put, descriptor, reader)

    def _do_put(self, descriptor, reader) -> None:
        self._descriptor(descriptor)
        msg = (flightsql.unpack(descriptor.command)
               if descriptor.descriptor_type == fl.DescriptorType.CMD else None)
        if msg is None:
            raise UsageError("bamql takes DoPut only to bind a Flight SQL prepared statement's "
                             "parameters")
        if isinstance(msg, pb.CommandStatementUpdate | pb.CommandPreparedStatementUpdate):
            raise UsageError(_READ_ONLY)
        if not isinstance(msg, pb.CommandPreparedStatementQuery):
            raise UsageError(f"bamql takes no DoPut of a Flight SQL {flightsql.name(msg)}")
        p = self._statement(msg)
        t = self._read_params(reader)
        if t.num_rows != 1:
            raise UsageError(f"bamql binds one row of parameters to a query, not {t.num_rows}")
        params = [col[0].as_py() for col in t.columns]
        handle = msg.prepared_statement_handle
        with self._lock:
            if handle in self._prepared:  # the answer run when prepared had no parameters
                if p.held is not None:
                    self._held.pop(p.held, None)
                self._prepared[handle] = _Prepared(p.sql, params)

    def _read_params(self, reader) -> pa.Table:
        """The parameters a DoPut sends, refused beyond the size the server reads (gRPC
        receives each of its messages whole first)."""
        batches, size = [], 0
        while True:
            try:
                chunk = reader.read_chunk()
            except StopIteration:
                break
            if chunk.data is None:
                continue
            size += chunk.data.nbytes
            if size > self.config.server_max_ticket:
                raise Refused(f"UsageError: the parameters are over {size:,} bytes; this "
                               f"server reads at most {self.config.server_max_ticket:,} "
                               "(BAMQL_SERVER_MAX_TICKET)")
            batches.append(chunk.data)
        return pa.Table.from_batches(batches, schema=reader.schema)

    def do_exchange(self, context, descriptor, reader, writer):
        raise Unsupported("bamql takes no DoExchange: a query goes by DoGet of a ticket "
                           "(JSON {\"sql\": ..., \"params\": [...]}) or by Flight SQL")


def _version() -> str | None:
    """bamql's version, or None when it runs from a source tree."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bamql")
    except PackageNotFoundError:
        return None


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
        :class:`BamqlServer`'s keywords (host, port, token, tls, allow_files, config).
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
        files = f", files under {', '.join(map(str, srv.files.roots))}" if srv.files else ""
        say(f"serving {where} on {srv.url} ({session.device}, {auth}, "
            f"tables: {', '.join(session.tables()) or 'none'}{files})")
        while not stop.wait(0.5):
            pass
        say("stopping: finishing the queries in flight")
        srv.shutdown()  # returns once the calls in flight have finished
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
        session.close()
    say("stopped")


def loopback(host: str) -> bool:
    """Whether ``host`` is an address of this machine alone (``localhost``, 127.0.0.0/8,
    ``::1``); a name that resolves elsewhere, or ``0.0.0.0``, is not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
