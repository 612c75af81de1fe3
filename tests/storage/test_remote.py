"""Files named by URI (storage.remote): ``file://`` URIs go through pyarrow's filesystem
(the code path of S3), and an S3 server (moto, where it is importable) serves the same
files; answers equal DuckDB's over the local copies."""

from __future__ import annotations

import glob
import http.server
import os
import socket
import threading
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.orc as paorc
import pyarrow.parquet as pq
import pytest

from bamql.api.session import Session
from bamql.config import Config
from bamql.errors import BamqlError, IngestError
from bamql.storage import filecache, remote
from bamql.storage.files import FileSet, expand
from bamql.storage.ingest import ingest
from bamql.storage.partitioned import open_table
from bamql.storage.remote import RemotePath
from tests.conftest import SAMPLES
from tests.reference import assert_same_rows, session_rows


def _sample(rows: int = 2000) -> pa.Table:
    t = pacsv.read_csv(SAMPLES[0]).slice(0, rows)
    tip = t.column("tip_amount").to_pylist()
    for i in range(0, rows, 41):
        tip[i] = None
    return t.set_column(t.schema.get_field_index("tip_amount"), "tip_amount",
                        pa.array(tip, pa.float64()))


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """trips/ partitioned by year and month (hive), with a hidden file and a marker;
    flat/ with CSV and ORC copies of the same rows."""
    root = tmp_path_factory.mktemp("remote")
    t = _sample()
    for k, (y, m) in enumerate([(2019, 1), (2019, 2), (2020, 1)]):
        d = root / "trips" / f"year={y}" / f"month={m}"
        d.mkdir(parents=True)
        pq.write_table(t.slice(k * 600, 600 + 100 * k), d / f"part-{k}.parquet",
                       row_group_size=256)
    (root / "trips" / "_SUCCESS").write_text("")
    pq.write_table(t.slice(0, 7), root / "trips" / "year=2019" / "month=1" / ".hidden.parquet")
    (root / "flat" / "sub" / "deep").mkdir(parents=True)
    pacsv.write_csv(t.slice(0, 900), root / "flat" / "x1.csv")
    pacsv.write_csv(t.slice(900), root / "flat" / "x2.csv")
    paorc.write_table(t, root / "flat" / "all.orc")
    pq.write_table(t.slice(0, 50), root / "flat" / "sub" / "a.parquet")
    pq.write_table(t.slice(50, 50), root / "flat" / "sub" / "deep" / "b.parquet")
    pq.write_table(t.slice(0, 5), root / "flat" / "sub" / "[x].parquet")
    return root


QUERIES = [
    "SELECT COUNT(*), SUM(total_amount), AVG(tip_amount), MIN(fare_amount) FROM {src}",
    "SELECT payment_type, COUNT(*), SUM(fare_amount) FROM {src} WHERE trip_distance > 2 "
    "GROUP BY 1 ORDER BY 1",
    "SELECT COUNT(*) FROM {src} WHERE trip_distance > 1000",  # empty answer
]
HIVE = "SELECT year, month, COUNT(*), SUM(fare_amount) FROM {src} WHERE year = 2019 " \
       "AND month >= 2 GROUP BY 1, 2 ORDER BY 1, 2"


# -- file:// URIs: the filesystem path without a server ----------------------------------

@pytest.mark.parametrize("pattern", [
    "flat/*.csv", "flat/x?.csv", "flat/**/*.parquet", "flat/**", "flat/sub/*", "**/*.orc",
    "flat/[a-x]*", "flat/[!x]*", "trips/**/.hidden*", "trips/*/month=1/*.parquet",
    "trips/**/month=*/*", "flat/sub/**/deep/*.parquet", "flat/sub/[[]x].parquet"])
def test_a_uri_glob_matches_what_a_local_glob_matches(tree, pattern):
    local = sorted(h for h in glob.glob(str(tree / pattern), recursive=True, include_hidden=True)
                   if os.path.isfile(h))
    assert local, pattern
    got = expand(f"file://{tree}/{pattern}")
    assert all(isinstance(r, RemotePath) for r in got)
    assert [r.fs_path for r in got] == local
    assert [r.uri for r in got] == [f"file://{h}" for h in local]


def test_a_uri_directory_holds_its_visible_files_as_a_local_one(tree):
    got = expand(f"file://{tree}/trips/")
    assert [r.fs_path for r in got] == [str(p) for p in expand(tree / "trips")]
    assert len(got) == 3 and not any(".hidden" in r.uri for r in got)


def test_a_uri_file_set_is_keyed_as_the_local_file(tree):
    """A file:// file keeps the local guarantees: inode and ctime are in its key."""
    a = FileSet.resolve([f"file://{tree}/flat/x1.csv"])
    b = FileSet.resolve([tree / "flat" / "x1.csv"])
    assert (a.sizes, a.mtimes, a.changes) == (b.sizes, b.mtimes, b.changes)
    assert a.changes[0] != (0, 0) and a.names_key != b.names_key


#: a directory is read by DuckDB as the glob of its visible files
_DIR_REF = "'{u}/trips/**/[!.]*.parquet'"


@pytest.mark.parametrize("q", QUERIES)
@pytest.mark.parametrize("src", ["'{u}/trips/**/*.parquet'", "read_csv('{u}/flat/x?.csv')",
                                 "read_parquet(['{u}/flat/sub/a.parquet', "
                                 "'{u}/flat/sub/deep/b.parquet'])", "'{u}/trips/'"])
def test_file_uris_answer_as_duckdb(session, tree, q, src):
    ours = session_rows(session, q.format(src=src.format(u=f"file://{tree}")))
    ref_src = _DIR_REF if src.endswith("/'") else src
    ref = duckdb.sql(q.format(src=ref_src.format(u=str(tree)))).fetchall()
    assert_same_rows(ours, ref, ordered=True)


def test_hive_partitions_over_file_uris_prune_and_answer_as_duckdb(session, tree):
    src = f"'file://{tree}/trips/**/*.parquet'"
    ours = session_rows(session, HIVE.format(src=src))
    ref = duckdb.sql(HIVE.format(src=f"'{tree}/trips/**/*.parquet'")).fetchall()
    assert_same_rows(ours, ref, ordered=True)
    assert ours and all(r[0] == 2019 for r in ours)
    first = session.explain(HIVE.format(src=src)).splitlines()[0]
    assert "1 of 4 Parquet files after partition pruning" in first  # the glob has .hidden


def test_an_orc_uri_answers_as_its_rows(session, tree):
    q = QUERIES[1]
    ours = session_rows(session, q.format(src=f"read_orc('file://{tree}/flat/all.orc')"))
    con = duckdb.connect()
    con.register("t", paorc.read_table(tree / "flat" / "all.orc"))
    assert_same_rows(ours, con.sql(q.format(src="t")).fetchall(), ordered=True)


def test_a_uri_store_is_reused_and_replaced_on_change(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    t = _sample(800)
    pq.write_table(t, d / "x.parquet")
    cache = tmp_path / "cache"
    sql = f"SELECT COUNT(*), SUM(total_amount) FROM 'file://{d}/*.parquet'"
    with Session(config=Config(device="cpu", file_cache=cache, cache_files=True)) as s:
        before = filecache.INGESTS
        first = session_rows(s, sql)
        assert first[0][0] == 800 and filecache.INGESTS == before + 1
        assert session_rows(s, sql) == first and filecache.INGESTS == before + 1
        pq.write_table(t.slice(0, 300), d / "x.parquet")
        os.utime(d / "x.parquet", ns=(1, 1))
        assert session_rows(s, sql)[0][0] == 300 and filecache.INGESTS == before + 2
        assert len([p for p in cache.iterdir() if not p.name.startswith(".")]) == 1


def test_a_failed_read_leaves_no_store(session, tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    pq.write_table(pa.table({"a": [1, 2]}), d / "1.parquet")
    (d / "2.parquet").write_bytes(b"PAR1 not really parquet")
    with pytest.raises(IngestError, match="2.parquet is not a readable Parquet file"):
        session.sql(f"SELECT COUNT(*) FROM 'file://{d}/*.parquet'")
    cache = session.config.file_cache_dir
    assert not cache.exists() or not [p for p in cache.iterdir() if not p.name.startswith(".")]


def test_ingest_reads_uris(tree, tmp_path):
    r = ingest([f"file://{tree}/flat/x?.csv", f"file://{tree}/flat/sub/*.parquet"],
               tmp_path / "t")
    assert r.rows == 2000 + 55
    sql = "SELECT COUNT(*), SUM(fare_amount), AVG(tip_amount) FROM {src}"
    with Session(tmp_path / "t", config=Config(device="cpu")) as s:
        ours = session_rows(s, sql.format(src=s.tables()[0]))
    ref = duckdb.sql(sql.format(src=f"(SELECT * FROM '{tree}/flat/x?.csv' UNION ALL "
                                    f"SELECT * FROM '{tree}/flat/sub/*.parquet')")).fetchall()
    assert_same_rows(ours, ref, ordered=True)


@pytest.mark.parametrize("src, text", [
    ("file://{d}/nothing/*.parquet", "no files match"),
    ("file://{d}/absent.parquet", "does not exist"),
    ("ftp://host/x.parquet", "ftp:// is not supported"),
    ("https://example.com/x.parquet", "https:// is not supported"),
    ("s3://buck*/x.parquet", "a glob in the bucket"),
])
def test_bad_uris_are_one_line_errors(session, tree, src, text):
    with pytest.raises(IngestError) as e:
        session.sql(f"SELECT COUNT(*) FROM '{src.format(d=tree)}'")
    msg = str(e.value)
    assert text in msg and "\n" not in msg and isinstance(e.value, BamqlError), msg


# -- S3 ---------------------------------------------------------------------------------

_S3_ENV = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID",
           "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION",
           "AWS_DEFAULT_REGION", "AWS_EC2_METADATA_DISABLED", "AWS_SHARED_CREDENTIALS_FILE",
           "AWS_CONFIG_FILE")


@pytest.fixture(scope="module")
def s3(tree):
    """A moto S3 server holding ``bkt`` with a copy of ``tree``; the environment points
    pyarrow at it for the module's tests and is restored after."""
    server = pytest.importorskip("moto.server")
    from pyarrow import fs

    moto = server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    saved = {k: os.environ.get(k) for k in _S3_ENV}
    os.environ.update(AWS_ENDPOINT_URL=f"http://{host}:{port}", AWS_ACCESS_KEY_ID="test",
                      AWS_SECRET_ACCESS_KEY="test", AWS_REGION="us-east-1",
                      AWS_EC2_METADATA_DISABLED="true")
    try:
        admin = fs.S3FileSystem(endpoint_override=f"http://{host}:{port}", access_key="test",
                                secret_key="test", region="us-east-1", allow_bucket_creation=True)
        admin.create_dir("bkt")
        fs.copy_files(str(tree), "bkt", source_filesystem=fs.LocalFileSystem(),
                      destination_filesystem=admin)
        yield admin
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        moto.stop()


@pytest.mark.parametrize("q", QUERIES)
@pytest.mark.parametrize("src", ["'{u}/trips/**/*.parquet'", "read_csv('{u}/flat/x?.csv')",
                                 "'{u}/trips/'", "read_parquet('{u}/flat/sub/**/*.parquet')"])
def test_s3_files_answer_as_duckdb(s3, session, tree, q, src):
    ours = session_rows(session, q.format(src=src.format(u="s3://bkt")))
    ref_src = _DIR_REF if src.endswith("/'") else src
    ref = duckdb.sql(q.format(src=ref_src.format(u=str(tree)))).fetchall()
    assert_same_rows(ours, ref, ordered=True)


def test_s3_hive_partitions_and_orc(s3, session, tree):
    ours = session_rows(session, HIVE.format(src="'s3://bkt/trips/*/*/*.parquet'"))
    ref = duckdb.sql(HIVE.format(src=f"'{tree}/trips/*/*/*.parquet'")).fetchall()
    assert_same_rows(ours, ref, ordered=True)
    q = QUERIES[0].format(src="read_orc('s3://bkt/flat/all.orc')")
    con = duckdb.connect()
    con.register("t", paorc.read_table(tree / "flat" / "all.orc"))
    assert_same_rows(session_rows(session, q), con.sql(QUERIES[0].format(src="t")).fetchall(),
                     ordered=True)


def test_s3_store_is_reused_and_replaced_when_an_object_changes(s3, tree, tmp_path):
    session = Session(config=Config(device="cpu", file_cache=tmp_path / "c", cache_files=True))
    t = _sample(500)
    with s3.open_output_stream("bkt/change/x.parquet") as out:
        pq.write_table(t, out)
    sql = "SELECT COUNT(*), SUM(fare_amount) FROM 's3://bkt/change/*.parquet'"
    before = filecache.INGESTS
    first = session_rows(session, sql)
    assert first[0][0] == 500 and session_rows(session, sql) == first
    assert filecache.INGESTS == before + 1
    time.sleep(1.1)  # S3's last-modified time counts seconds
    with s3.open_output_stream("bkt/change/x.parquet") as out:
        pq.write_table(t.slice(0, 200), out)
    assert session_rows(session, sql)[0][0] == 200 and filecache.INGESTS == before + 2
    session.close()


def test_ingest_from_s3_in_partitions(s3, tree, tmp_path):
    r = ingest(["s3://bkt/trips/*/*/part-*.parquet"], tmp_path / "t", partitions=2)
    t = open_table(tmp_path / "t")
    try:
        assert r.rows == t.rows == 600 + 700 + 800 and len(t.parts) == 2
    finally:
        t.close()
    with Session(tmp_path / "t", config=Config(device="cpu")) as s:
        ours = session_rows(s, HIVE.format(src=s.tables()[0]))
    ref = duckdb.sql(HIVE.format(src=f"'{tree}/trips/*/*/part-*.parquet'")).fetchall()
    assert_same_rows(ours, ref, ordered=True)
    # files without partition columns: each partition's process opens its files by URI
    r = ingest(["s3://bkt/flat/sub/**/*.parquet"], tmp_path / "u", partitions=2)
    assert r.rows == 105
    q = QUERIES[1]
    with Session(tmp_path / "u", config=Config(device="cpu")) as s:
        ours = session_rows(s, q.format(src=s.tables()[0]))
    ref = duckdb.sql(q.format(src=f"'{tree}/flat/sub/**/*.parquet'")).fetchall()
    assert_same_rows(ours, ref, ordered=True)


@pytest.mark.parametrize("src, text", [
    ("s3://nobucket/x.parquet", "no such bucket 'nobucket'"),
    ("s3://nobucket/*.parquet", "no such bucket 'nobucket'"),
    ("s3://bkt/absent.parquet", "source s3://bkt/absent.parquet does not exist"),
    ("s3://bkt/nothing/*.parquet", "no files match s3://bkt/nothing/*.parquet"),
])
def test_s3_errors_name_the_url(s3, session, src, text):
    with pytest.raises(IngestError) as e:
        session.sql(f"SELECT COUNT(*) FROM '{src}'")
    msg = str(e.value)
    assert text in msg and "\n" not in msg, msg


def _serve(handler_code: int | None) -> tuple[int, object]:
    """A local endpoint that answers every request with ``handler_code`` (an HTTP status),
    or accepts connections and never answers (None)."""
    if handler_code is None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        held: list = []
        threading.Thread(target=lambda: [held.append(sock.accept()) for _ in iter(int, 1)],
                         daemon=True).start()
        return sock.getsockname()[1], sock

    class Deny(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            body = b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
            self.send_response(handler_code)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_HEAD = _answer

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Deny)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv.server_address[1], srv


@pytest.fixture
def endpoint_env(monkeypatch, tmp_path):
    for k in _S3_ENV:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.aws
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setattr(remote, "REQUEST_TIMEOUT_S", 1.0)
    monkeypatch.setattr(remote, "CONNECT_TIMEOUT_S", 1.0)
    monkeypatch.setattr(remote, "S3_ATTEMPTS", 1)
    remote._filesystem.cache_clear()
    yield monkeypatch
    remote._filesystem.cache_clear()


def test_s3_access_denied_and_no_credentials(endpoint_env, session):
    port, srv = _serve(403)
    try:
        endpoint_env.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
        with pytest.raises(IngestError) as e:
            session.sql("SELECT COUNT(*) FROM 's3://bkt/x.parquet'")
        msg = str(e.value)
        assert msg.startswith("cannot read s3://bkt/x.parquet: access denied (no AWS "
                              "credentials found") and "\n" not in msg, msg
        endpoint_env.setenv("AWS_ACCESS_KEY_ID", "k")
        endpoint_env.setenv("AWS_SECRET_ACCESS_KEY", "s")
        with pytest.raises(IngestError) as e:
            session.sql("SELECT COUNT(*) FROM 's3://bkt/x.parquet'")
        assert str(e.value) == "cannot read s3://bkt/x.parquet: access denied"
    finally:
        srv.shutdown()


@pytest.mark.parametrize("kind, text", [("closed", "cannot reach the endpoint"),
                                        ("silent", "did not answer in time")])
def test_s3_unreachable_endpoint_fails_fast(endpoint_env, session, kind, text):
    if kind == "closed":
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port, held = s.getsockname()[1], None
        s.close()
    else:
        port, held = _serve(None)
    endpoint_env.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    endpoint_env.setenv("AWS_ACCESS_KEY_ID", "k")
    endpoint_env.setenv("AWS_SECRET_ACCESS_KEY", "s")
    t0 = time.monotonic()
    try:
        with pytest.raises(IngestError) as e:
            session.sql("SELECT COUNT(*) FROM 's3://bkt/x.parquet'")
    finally:
        if held is not None:
            held.close()
    msg = str(e.value)
    assert msg.startswith("cannot read s3://bkt/x.parquet: ") and text in msg, msg
    assert f"127.0.0.1:{port}" in msg and "\n" not in msg
    assert time.monotonic() - t0 < 20
