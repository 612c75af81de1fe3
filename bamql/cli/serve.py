"""``bamql serve``: its options, the checks of its listening address, token and TLS files, and
the server's run (``bamql.server.flight.serve``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bamql.cli.sql import add_engine_options
from bamql.config import Config
from bamql.errors import UsageError


def cmd_serve(a: argparse.Namespace) -> int:
    from bamql.api.connection import connect
    from bamql.server import flight, roots

    config = Config.from_env()
    token = a.token or config.server_token
    if not flight.loopback(a.host) and not token and not a.insecure:
        raise UsageError(f"listening on {a.host} lets anyone who reaches the port query: give "
                         "--token (or set BAMQL_SERVER_TOKEN), or --insecure to serve without one")
    if a.allow_files is not None and not a.allow_files:
        raise UsageError("--allow-files takes the directories whose files queries may read: "
                         "bamql serve DIR --allow-files FILES_DIR ... (. for the current one)")
    files = roots.FileRoots(a.allow_files) if a.allow_files else None  # checked before the session opens
    if bool(a.tls_cert) != bool(a.tls_key):
        raise UsageError("TLS takes both --tls-cert and --tls-key")
    tls = None
    if a.tls_cert:
        try:
            tls = (Path(a.tls_cert).read_bytes(), Path(a.tls_key).read_bytes())
        except OSError as e:
            raise UsageError(f"cannot read the TLS certificate or key: {e}") from None
    if not flight.loopback(a.host) and not token:
        print("bamql: note: --insecure: listening beyond localhost without a token, anyone who "
              "reaches the port can query", file=sys.stderr)
    s = connect(a.data, device=a.device, backend=a.backend, cache=a.cache,
                cache_files=a.cache_files)
    if s.note:
        print(f"bamql: {s.note}", file=sys.stderr)
    flight.serve(s, lambda m: print(f"bamql: {m}", file=sys.stderr, flush=True), host=a.host,
          port=a.port, token=token, tls=tls, allow_files=files and files.roots, config=config)
    return 0


def add_serve_command(sub) -> None:
    """Register ``serve`` on the CLI's subparsers."""
    p = sub.add_parser(
        "serve", help="serve tables to many clients over Arrow Flight",
        description="Open DIR once (compiled kernels, caches and pinned tables stay warm) and "
        "answer queries from many clients over Arrow Flight (gRPC). Clients: bamql sql "
        "--server URL, bamql shell --server URL, bamql.connect('grpc://HOST:PORT', token=...), "
        "any Flight SQL client (ADBC, JDBC: grpc://HOST:PORT), "
        "or any Flight client (do_get with a ticket of JSON {\"sql\": ..., \"params\": [...]}). "
        "SIGINT or SIGTERM finish the queries in flight, close the session and stop. "
        "Limits, from the environment: BAMQL_SERVER_MAX_TICKET (bytes of a request, default "
        "1MiB), BAMQL_SERVER_MAX_SQL (bytes of a query's SQL, default 1MiB), "
        "BAMQL_SERVER_MAX_NESTING (depth of parentheses, default 200), "
        "BAMQL_SERVER_QUERY_TIMEOUT (seconds a query runs before the server interrupts it and "
        "answers DEADLINE_EXCEEDED, default 300, 0: none), BAMQL_SERVER_MAX_QUERIES (queries "
        "at once, default 32).")
    p.add_argument("data", metavar="DIR", help="a table directory or a directory of tables")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: all, "
                   "which needs --token or --insecure)")
    p.add_argument("--port", type=int, default=8815, help="port (default 8815; 0: any free one)")
    p.add_argument("--token", default=None,
                   help="require this bearer token of every client (default: BAMQL_SERVER_TOKEN, "
                   "else none); clients pass --token or set BAMQL_SERVER_TOKEN")
    p.add_argument("--tls-cert", default=None, metavar="PEM",
                   help="serve over TLS (grpc+tls://) with this certificate chain ...")
    p.add_argument("--tls-key", default=None, metavar="PEM", help="... and this private key")
    p.add_argument("--insecure", action="store_true",
                   help="serve beyond localhost without a token (refused otherwise)")
    p.add_argument("--allow-files", nargs="*", default=None, metavar="FILES_DIR",
                   help="let queries name files in FROM ('x.parquet'), read from the server's "
                   "file system under these directories only: a file whose real path, symlinks "
                   "resolved, lies outside them is refused, as are URLs; give at least one "
                   "(. for the current directory) and put it after DIR (default: only DIR's "
                   "tables)")
    add_engine_options(p)
    p.set_defaults(func=cmd_serve)
