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

import argparse
import ctypes
import functools
import hashlib
import hmac
import ipaddress
import itertools
import json
import logging
import os
import re
import secrets
import signal
import site
import sys
import sysconfig
import threading
import traceback
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.flight as fl

from bamql.api import wire
from bamql.api.session import Session
from bamql.config import Config
from bamql.errors import BamqlError, OutOfRangeError, PlanError, UsageError
from bamql.exec.result import Result
from bamql.server import flightsql
from bamql.server.proto import Flight_pb2 as flight_pb2
from bamql.server.proto import FlightSql_pb2 as pb
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
#: the bamql errors that are a client's own (INVALID_ARGUMENT: ADBC's ProgrammingError)
_CLIENTS = (PlanError, UsageError, OutOfRangeError)
_READ_ONLY = "bamql is read-only: it answers queries, not updates"


@dataclass(frozen=True)
class _Prepared:
    """A Flight SQL prepared statement: its query, the parameters bound to it, and the
    handle of its answer where it was run when prepared (held for its first execution)."""

    sql: str
    params: list[object] | None = None
    held: bytes | None = None


# -- errors a client sees -------------------------------------------------------------------
class _OneLine(Exception):
    """An error of the server's own that pyarrow turns into an Arrow status itself: an
    INVALID_ARGUMENT or UNIMPLEMENTED answer, or any error of ``get_schema`` (whose pyarrow
    callback takes no Flight error). pyarrow appends the traceback of such an exception to
    the message it sends; :func:`_one_line_details` makes that one word instead."""

    detail = "failed"


class _Refused(_OneLine, pa.ArrowInvalid):
    """A request that is the client's mistake (INVALID_ARGUMENT: ADBC raises
    ProgrammingError): one beyond a limit of the server, or a query's PlanError, UsageError
    or OutOfRangeError. Its message is ``Class: message`` of the bamql error a bamql client
    raises."""

    detail = "refused"


class _NotFound(_OneLine, pa.ArrowKeyError):
    """A ticket or prepared statement the server does not hold (NOT_FOUND: ADBC raises
    ProgrammingError); its message is ``Class: message`` as :class:`_Refused`'s."""

    detail = "not found"


class _Unsupported(_OneLine, NotImplementedError):
    """A call the server does not take (UNIMPLEMENTED)."""

    detail = "unsupported"


class _Failed(_OneLine):
    """Any other error of ``get_schema`` (UNKNOWN)."""


_FORMAT_LOCK = threading.Lock()


def _one_line_details() -> None:
    """Have ``traceback.format_exception`` give one word (``_OneLine.detail``) for the
    server's ``_OneLine`` errors, and everything else as before.

    pyarrow's Flight server turns a Python exception of a handler (other than a Flight error)
    into the message it sends with ``traceback.format_exception``: a traceback holding the
    paths of the server's install. Its ``get_schema`` callback takes no Flight error at
    all, and INVALID_ARGUMENT and UNIMPLEMENTED come only from such exceptions."""
    with _FORMAT_LOCK:
        fmt = traceback.format_exception
        if getattr(fmt, "bamql_one_line", False):
            return

        def format_exception(exc, /, *args, **kw):
            value = args[0] if args else kw.get("value", exc)
            if isinstance(value, _OneLine):
                return [type(value).detail]
            return fmt(exc, *args, **kw)

        format_exception.__doc__ = fmt.__doc__
        format_exception.bamql_one_line = True  # type: ignore[attr-defined]
        traceback.format_exception = format_exception


@functools.cache
def _install_dirs() -> list[str]:
    """The directories of bamql's and Python's install (longest first), which no error sent
    to a client names."""
    here = Path(__file__).parent.parent  # the bamql package
    dirs = {str(here), str(here.resolve()), *site.getsitepackages()}
    if site.ENABLE_USER_SITE:
        dirs.add(site.getusersitepackages())
    dirs.update(v for k, v in sysconfig.get_paths().items() if k in ("stdlib", "platstdlib",
                                                                     "purelib", "platlib"))
    dirs.update((sys.prefix, sys.base_prefix, sys.exec_prefix))
    # a prefix of one level (/usr) would hide every path beneath it
    return sorted((d for d in dirs if d and len(Path(d).parts) > 2), key=len, reverse=True)


_PROC = re.compile(r"/proc/\d+")


def _scrub(text: str) -> str:
    """``text`` without the paths of the server's install and its process id."""
    for d in _install_dirs():
        text = re.sub(re.escape(d) + r"(?![^/\s'\":,)])[^\s'\":,)]*", "<server path>", text)
    return _PROC.sub("/proc/<pid>", text)


def _first_line(e: BaseException) -> str:
    return _scrub((str(e).strip().splitlines() or [""])[0])


def _client_error(e: Exception, one_line: bool = False) -> Exception:
    """The one-line error a client is sent for ``e``. ``one_line``: for ``get_schema``,
    whose pyarrow callback sends a Flight error with its traceback (UNKNOWN then, as any
    other error there)."""
    if isinstance(e, _OneLine):
        return e
    if isinstance(e, fl.FlightError):  # the server's own (time, load), or pyarrow's
        text = _first_line(e)
        return _Failed(text) if one_line else type(e)(text, extra_info=e.extra_info)
    if isinstance(e, BamqlError):
        msg, info = wire.error_info(e)
        d = json.loads(info)
        d["message"] = _scrub(d["message"])
        msg = _scrub(msg)
        if isinstance(e, _CLIENTS):  # Class: message on one line, as the client reads it
            return _Refused(" ".join(msg.split("\n")))
        return _Failed(msg) if one_line else fl.FlightServerError(msg,
                                                                    extra_info=json.dumps(d).encode())
    log.error("a call failed", exc_info=e)
    text = f"internal error: {type(e).__name__}: {_first_line(e)}"
    return _Failed(text) if one_line else fl.FlightInternalError(text)


def _guard(fn: Callable, *args, one_line: bool = False):
    """``fn(*args)``, its failures as errors of one line (:func:`_client_error`)."""
    try:
        return fn(*args)
    except Exception as e:
        raise _client_error(e, one_line) from None


# -- limits ----------------------------------------------------------------------------------
#: what hides parentheses from the nesting count of SQL: string literals, quoted names,
#: comments, dollar-quoted strings (each may run to the end of the text unclosed, so that no
#: match is tried again from a later start)
_SQL_QUOTED = re.compile(r"'[^']*(?:''[^']*)*'?|\"[^\"]*(?:\"\"[^\"]*)*\"?|--[^\n]*"
                         r"|/\*(?:.*?\*/|.*)|\$\$(?:.*?\$\$|.*)", re.DOTALL)
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)


def _depth(data: bytes, opens: bytes, closes: bytes) -> int:
    """The deepest nesting of the brackets ``opens``/``closes`` in ``data``."""
    a = np.frombuffer(data, np.uint8)
    step = np.isin(a, list(opens)).astype(np.int32) - np.isin(a, list(closes))
    return int(np.cumsum(step).max(initial=0))


def sql_nesting(text: str) -> int:
    """How deeply the parentheses of a query nest (outside its strings, quoted names and
    comments)."""
    return _depth(_SQL_QUOTED.sub(" ", text).encode("utf-8", "surrogatepass"), b"(", b")")


def json_nesting(data: bytes) -> int:
    """How deeply the arrays and objects of a JSON text nest."""
    return _depth(_JSON_STRING.sub(b" ", data), b"[{", b"]}")


#: seconds between the interrupts of a query that runs on past its first
_AGAIN_S = 1.0


class _Interrupted(BaseException):
    """Raised in a query's thread to stop it (past its time): no ``except Exception`` of the
    engine holds it up."""


def _quiet_lost_interrupts() -> None:
    """Have ``sys.unraisablehook`` pass over an interrupt that Python dropped (raised in a
    finalizer or a callback of C code; the query is interrupted again) instead of printing
    its traceback; everything else as before."""
    with _FORMAT_LOCK:
        hook = sys.unraisablehook
        if getattr(hook, "bamql_quiet", False):
            return

        def unraisable(u):
            if not isinstance(u.exc_value, _Interrupted):
                hook(u)

        unraisable.bamql_quiet = True  # type: ignore[attr-defined]
        sys.unraisablehook = unraisable


def _raise_in(thread: threading.Thread, exc: type[BaseException] | None) -> None:
    """Raise ``exc`` in ``thread`` at its next Python step (None: take back one not yet
    raised)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident),
                                               ctypes.py_object(exc) if exc else None)


class _Query:
    """One query run in a thread of its own, so that the call waiting for it can answer in
    time while it runs on, and stop it."""

    _ids = itertools.count(1)

    def __init__(self, fn: Callable, args: tuple, ended: Callable[[_Query], None]) -> None:
        self._fn, self._args, self._ended = fn, args, ended
        self._lock = threading.Lock()
        self._state = "running"  # -> "interrupted" -> "finished"
        self.done = threading.Event()
        self.value: object = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, daemon=True,
                                       name=f"bamql-query-{next(self._ids)}")

    def _main(self) -> None:
        try:
            try:
                try:
                    self.value = self._fn(*self._args)
                except BaseException as e:  # handed to the call that waits
                    self.error = e
                self._settle()
            except _Interrupted:  # it came after the work, while settling: settle again
                self._settle()
        finally:
            self.done.set()
            self._ended(self)

    def _settle(self) -> None:
        """Mark the work finished and take back an interrupt not yet raised: none comes
        after."""
        with self._lock:
            self._state = "finished"
            _raise_in(self.thread, None)

    def interrupt(self) -> bool:
        """Stop the query at its next Python step; False where it has already finished.

        An exception raised where Python drops it (in a callback of C code, a finalizer) is
        lost: the query is interrupted again each second until its thread has stopped."""
        with self._lock:
            if self._state != "running":
                return False
            self._state = "interrupted"
            _raise_in(self.thread, _Interrupted)
        threading.Thread(target=self._again, daemon=True, name=f"{self.thread.name}-stop").start()
        return True

    def _again(self) -> None:
        while not self.done.wait(_AGAIN_S) and self.thread.is_alive():
            with self._lock:
                if self._state != "interrupted":
                    return
                _raise_in(self.thread, _Interrupted)

    def result(self):
        if self.error is not None:
            raise self.error
        return self.value


class _Runner:
    """Runs queries under the server's time limit, at most so many at once."""

    def __init__(self, timeout: float, most: int) -> None:
        self.timeout = timeout or None
        self.most = most
        self._lock = threading.Lock()
        self._running: set[_Query] = set()

    def running(self) -> int:
        """The queries running now, interrupted ones that have not yet stopped included."""
        with self._lock:
            return len(self._running)

    def _ended(self, q: _Query) -> None:
        with self._lock:
            self._running.discard(q)

    def run(self, fn: Callable, *args):
        q = _Query(fn, args, self._ended)
        with self._lock:
            if len(self._running) >= self.most:
                raise fl.FlightUnavailableError(
                    f"the server is running as many queries as it takes ({self.most}, "
                    "BAMQL_SERVER_MAX_QUERIES); try again shortly",
                    extra_info=_info("ServerError", "busy"))
            self._running.add(q)
        try:
            q.thread.start()
        except BaseException:
            self._ended(q)
            raise
        if not q.done.wait(self.timeout) and q.interrupt():
            msg = (f"the query ran past this server's limit of {self.timeout:g} s "
                   "(BAMQL_SERVER_QUERY_TIMEOUT) and was stopped")
            raise fl.FlightTimedOutError(msg, extra_info=_info("ServerError", msg))
        q.done.wait()
        return q.result()


def _info(cls: str, message: str) -> bytes:
    """The ``extra_info`` of a Flight error that a bamql client raises as ``cls``."""
    return json.dumps({"class": cls, "message": message}).encode()


# -- files in place ---------------------------------------------------------------------------
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_GLOB = re.compile(r"[*?\[]")
#: directories no root may be or lie in
_SYSTEM = (Path("/proc"), Path("/sys"), Path("/dev"))


class FileRoots:
    """The directories whose files queries may name in FROM, by real path: a file is read
    only where its path, symlinks resolved, lies in one of them.

    Parameters
    ----------
    roots
        Existing directories (``~`` expanded; relative to the working directory).

    Raises
    ------
    UsageError
        None given, or one that is no directory, or the whole file system or a system one.
    """

    def __init__(self, roots: Sequence[str | os.PathLike]) -> None:
        if isinstance(roots, str | bytes | os.PathLike) or not isinstance(roots, Sequence) \
                or not roots:
            raise UsageError(f"allow_files takes the directories whose files queries may read, "
                             f"not {roots!r} (bamql serve DIR --allow-files . for the current one)")
        out = []
        for r in roots:
            p = Path(os.path.expanduser(os.fspath(r)))
            real = Path(os.path.realpath(p))
            if not real.is_dir():
                raise UsageError(f"--allow-files: {r} is no directory")
            if real == Path("/") or any(real == d or d in real.parents for d in _SYSTEM):
                raise UsageError(f"--allow-files: {r} is a system directory; name the "
                                 "directories that hold the files")
            out.append(real)
        self.roots = tuple(dict.fromkeys(out))

    def __repr__(self) -> str:
        return f"FileRoots({[str(r) for r in self.roots]})"

    def holds(self, path: str | os.PathLike) -> bool:
        """Whether ``path``, symlinks resolved, lies in a root."""
        real = Path(os.path.realpath(path))
        return any(real == r or r in real.parents for r in self.roots)

    def check(self, spec: str | os.PathLike) -> None:
        """Refuse (PlanError) a path, directory or glob of FROM that reaches beyond the
        roots: its fixed part before any walk, then each file it names."""
        from bamql.storage.files import expand

        text = os.fspath(spec)
        refused = PlanError(f"this server reads files only under the directories it serves "
                            f"(bamql serve --allow-files DIR), not {text!r}")
        if not isinstance(text, str) or _SCHEME.match(text):
            raise refused
        path = os.path.expanduser(text)
        parts = path.split("/")
        fixed = list(itertools.takewhile(lambda part: not _GLOB.search(part), parts))
        base = "/".join(fixed) or ("/" if path.startswith("/") else ".")
        if not self.holds(base):
            raise refused
        if any(not self.holds(f) for f in expand(text)):
            raise refused


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
        _one_line_details()
        _quiet_lost_interrupts()
        scheme = "grpc+tls" if tls else "grpc"
        middleware = {"auth": _TokenCheck(token)} if token else {}
        certs = [fl.CertKeyPair(cert=tls[0], key=tls[1])] if tls else []
        super().__init__(f"{scheme}://{host}:{port}", tls_certificates=certs,
                         middleware=middleware)
        self.session = session
        self.url = f"{scheme}://{host}:{self.port}"
        self.queries = _Runner(self.config.server_query_timeout, self.config.server_max_queries)
        self._held: OrderedDict[bytes, Result | pa.Table] = OrderedDict()
        self._prepared: OrderedDict[bytes, _Prepared] = OrderedDict()
        self._lock = threading.Lock()

    # -- limits ------------------------------------------------------------------------------
    def _request(self, data: bytes, what: str) -> bytes:
        """``data`` of a request, refused beyond the size the server reads."""
        most = self.config.server_max_ticket
        if len(data) > most:
            raise _Refused(f"UsageError: {what} is {len(data):,} bytes; this server reads "
                           f"at most {most:,} (BAMQL_SERVER_MAX_TICKET)")
        return data

    def _check_sql(self, text: str) -> str:
        """A query's text, refused beyond the length or the nesting the server takes."""
        size, most = len(text.encode("utf-8", "surrogatepass")), self.config.server_max_sql
        if size > most:
            raise _Refused(f"PlanError: the query is {size:,} bytes of SQL; this server "
                           f"takes at most {most:,} (BAMQL_SERVER_MAX_SQL)")
        depth, most = sql_nesting(text), self.config.server_max_nesting
        if depth > most:
            raise _Refused(f"PlanError: the query nests parentheses {depth} deep; this "
                           f"server takes at most {most} (BAMQL_SERVER_MAX_NESTING)")
        return text

    def _command(self, data: bytes) -> tuple[str, object]:
        """The query and parameters of a command (JSON), within the server's limits."""
        self._request(data, "the command")
        depth, most = json_nesting(data), self.config.server_max_nesting
        if depth > most:
            raise _Refused(f"UsageError: the command's JSON nests {depth} deep; this "
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
        return _guard(self._do_get, ticket)

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
        return _guard(self._get_flight_info, descriptor)

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
        return _guard(self._get_schema, descriptor, one_line=True)

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
        return _guard(lambda: [self._table_info(n) for n in self.session.tables()])

    def list_actions(self, context):
        return list(wire.ACTIONS.items()) + list(FLIGHT_SQL_ACTIONS.items())

    def do_action(self, context, action):
        return _guard(self._do_action, action)

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
            raise _NotFound("UsageError: this Flight SQL ticket is spent or unknown: ask "
                            "GetFlightInfo again")
        return held

    def _statement(self, msg) -> _Prepared:
        handle = msg.prepared_statement_handle
        with self._lock:
            p = self._prepared.get(handle)
            if p is not None:
                self._prepared.move_to_end(handle)
        if p is None:
            raise _NotFound("UsageError: no such prepared statement (it was closed, or the "
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
        return _guard(self._do_put, descriptor, reader)

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
                raise _Refused(f"UsageError: the parameters are over {size:,} bytes; this "
                               f"server reads at most {self.config.server_max_ticket:,} "
                               "(BAMQL_SERVER_MAX_TICKET)")
            batches.append(chunk.data)
        return pa.Table.from_batches(batches, schema=reader.schema)

    def do_exchange(self, context, descriptor, reader, writer):
        raise _Unsupported("bamql takes no DoExchange: a query goes by DoGet of a ticket "
                           "(JSON {\"sql\": ..., \"params\": [...]}) or by Flight SQL")


def _version() -> str | None:
    """bamql's version, or None when it runs from a source tree."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bamql")
    except PackageNotFoundError:
        return None


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


def cmd_serve(a: argparse.Namespace) -> int:
    from bamql.api.connection import connect

    config = Config.from_env()
    token = a.token or config.server_token
    if not loopback(a.host) and not token and not a.insecure:
        raise UsageError(f"listening on {a.host} lets anyone who reaches the port query: give "
                         "--token (or set BAMQL_SERVER_TOKEN), or --insecure to serve without one")
    if a.allow_files is not None and not a.allow_files:
        raise UsageError("--allow-files takes the directories whose files queries may read: "
                         "bamql serve DIR --allow-files FILES_DIR ... (. for the current one)")
    files = FileRoots(a.allow_files) if a.allow_files else None  # checked before the session opens
    if bool(a.tls_cert) != bool(a.tls_key):
        raise UsageError("TLS takes both --tls-cert and --tls-key")
    tls = None
    if a.tls_cert:
        try:
            tls = (Path(a.tls_cert).read_bytes(), Path(a.tls_key).read_bytes())
        except OSError as e:
            raise UsageError(f"cannot read the TLS certificate or key: {e}") from None
    if not loopback(a.host) and not token:
        print("bamql: note: --insecure: listening beyond localhost without a token, anyone who "
              "reaches the port can query", file=sys.stderr)
    s = connect(a.data, device=a.device, backend=a.backend, cache=a.cache,
                cache_files=a.cache_files)
    if s.note:
        print(f"bamql: {s.note}", file=sys.stderr)
    serve(s, lambda m: print(f"bamql: {m}", file=sys.stderr, flush=True), host=a.host,
          port=a.port, token=token, tls=tls, allow_files=files and files.roots, config=config)
    return 0
