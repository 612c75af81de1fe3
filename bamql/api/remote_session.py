"""A session on a bamql server (``bamql serve``): ``bamql.connect("grpc://host:port")``."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.flight as fl

from bamql import errors
from bamql.api import wire
from bamql.config import Config
from bamql.errors import BamqlError, ServerError, UsageError
from bamql.exec.resultset import Result

if TYPE_CHECKING:  # a client imports no planner (sqlglot)
    from bamql.sql.params import Params

#: the URL schemes of a bamql server
SCHEMES = ("grpc://", "grpc+tcp://", "grpc+tls://")


@dataclass(frozen=True)
class RemoteTable:
    """What a client knows of a server's table."""

    name: str
    rows: int
    page_size: int


def _first(e: Exception) -> str:
    """An Arrow or Flight error's own message, without gRPC's context after it."""
    text = (str(e).strip().splitlines() or [""])[0]
    for cut in (". Detail:", ". gRPC client debug context:", ". Client context:"):
        text = text.split(cut)[0]
    return re.sub(r"^Flight returned [a-z ]+ error, with message: ", "", text)


_NAMED = re.compile(r"^(\w+Error): (.+)$", re.DOTALL)


def _named_error(text: str) -> BamqlError | None:
    """The bamql error a message ``Class: message`` names, or None: a query's PlanError,
    UsageError or OutOfRangeError and a refusal of the server's limits arrive so, as
    INVALID_ARGUMENT, a spent ticket as NOT_FOUND (Arrow errors without ``extra_info``)."""
    m = _NAMED.match(text)
    cls = getattr(errors, m.group(1), None) if m else None
    if isinstance(cls, type) and issubclass(cls, BamqlError):
        return cls(m.group(2))
    return None


def _flight_error(e: fl.FlightError, url: str) -> BamqlError:
    """The bamql error a Flight error stands for: a query's own error as its class, else a
    ServerError of one line."""
    err = wire.bamql_error(getattr(e, "extra_info", None))
    if err is not None:
        return err
    first = _first(e)
    if isinstance(e, fl.FlightUnauthenticatedError | fl.FlightUnauthorizedError):
        return ServerError(f"the bamql server at {url} refused the call: {first}")
    if isinstance(e, fl.FlightUnavailableError):
        return ServerError(f"cannot reach a bamql server at {url}: {first}")
    return ServerError(f"the bamql server at {url} failed: {first}")


class RemoteSession:
    """A connection to a bamql server, with the query methods of a Session.

    Parameters
    ----------
    url
        ``grpc://host:port`` (or ``grpc+tls://host:port`` for a server with TLS).
    token
        The server's bearer token; None: ``BAMQL_SERVER_TOKEN``, else none.
    tls_root_certs
        PEM file (or bytes) of the certificate that signed a TLS server's (a self-signed
        server's own); None: the system's roots.
    timeout
        Seconds a call may take; None: no limit.

    The server is asked for its state at once: an unreachable server or a wrong token is
    a :class:`bamql.errors.ServerError` here, not at the first query.
    """

    def __init__(self, url: str, token: str | None = None,
                 tls_root_certs: str | os.PathLike | bytes | None = None,
                 timeout: float | None = None) -> None:
        if not isinstance(url, str) or not url.startswith(SCHEMES):
            raise UsageError(f"a bamql server's URL is grpc://host:port or grpc+tls://host:port, "
                             f"not {url!r}")
        self.config = Config.from_env(server_token=token)
        self.url = url
        self.path = url
        self.note = ""
        self._closed = False
        if tls_root_certs is not None and not isinstance(tls_root_certs, bytes):
            try:
                tls_root_certs = Path(tls_root_certs).read_bytes()
            except OSError as e:
                raise UsageError(f"cannot read the TLS root certificates: {e}") from None
        kw = {"tls_root_certs": tls_root_certs} if tls_root_certs is not None else {}
        try:
            self._client = fl.FlightClient(url, **kw)
        except (pa.ArrowException, ValueError) as e:
            raise UsageError(f"cannot connect to {url!r}: {e}") from None
        tok = self.config.server_token
        headers = [(b"authorization", f"Bearer {tok}".encode())] if tok else []
        self._options = fl.FlightCallOptions(headers=headers, timeout=timeout)
        try:
            info = json.loads(self._action("health"))
        except BaseException:
            self._client.close()
            raise
        self.device = info.get("device", "?")
        self.backend = info.get("backend", "?")
        self.server_path = info.get("path")

    def _call(self, fn, *args):
        if self._closed:
            raise UsageError(f"the session on {self.url} is closed; connect() again to query it")
        try:
            return fn(*args, options=self._options)
        except fl.FlightError as e:
            raise _flight_error(e, self.url) from None
        except pa.ArrowException as e:  # a refused request, or the server's stream broke off
            err = _named_error(_first(e))
            raise err or ServerError(f"the bamql server at {self.url} failed: {_first(e)}") \
                from None

    def _action(self, kind: str, body: bytes = b"") -> bytes:
        out = self._call(lambda options: list(self._client.do_action(fl.Action(kind, body),
                                                                     options=options)))
        return out[0].body.to_pybytes() if out else b""

    # -- queries -----------------------------------------------------------------------------
    def sql(self, text: str, params: Params = None) -> Result:
        """Run a query (or EXPLAIN [ANALYZE] of one) on the server; as ``Session.sql``."""
        ticket = fl.Ticket(wire.encode_command(text, params))
        t = self._call(lambda options: self._client.do_get(ticket, options=options).read_all())
        return wire.table_result(t)

    def explain(self, text: str, params: Params = None) -> str:
        """The EXPLAIN text of a query (``params`` as for :meth:`sql`)."""
        return self._action("explain", wire.encode_command(text, params)).decode()

    # -- catalog -----------------------------------------------------------------------------
    def _tables(self) -> dict[str, RemoteTable]:
        return {d["name"]: RemoteTable(d["name"], d["rows"], d["page_size"])
                for d in json.loads(self._action("tables"))}

    def tables(self) -> list[str]:
        """Names of the server's tables."""
        return sorted(self._tables())

    def store(self, table: str) -> RemoteTable:
        """A table's row count and page size."""
        tables = self._tables()
        if table not in tables:
            from bamql.errors import PlanError

            raise PlanError(f"unknown table {table!r} (tables: {', '.join(sorted(tables))})")
        return tables[table]

    def schema(self, table: str) -> pa.Schema:
        """The logical Arrow schema of a table (as ``Session.schema``)."""
        return pa.ipc.read_schema(pa.py_buffer(self._action("schema", table.encode())))

    # -- lifetime ----------------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection (the server and its session go on)."""
        if not self._closed:
            self._closed = True
            self._client.close()

    def __enter__(self) -> RemoteSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RemoteSession({self.url!r}, device={self.device!r})"
