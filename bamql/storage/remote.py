"""Files named by URI (``s3://``, ``gs://``, ``hdfs://``, ``file://``): opened through the
filesystem ``pyarrow.fs.FileSystem.from_uri`` makes for the URI's scheme and authority, so
that one code path lists, stats and reads local and remote files alike.

Credentials and endpoints come from the environment as pyarrow reads them: for S3,
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``, ``AWS_PROFILE`` and
``~/.aws``, the region from the bucket (or ``AWS_REGION``/``AWS_DEFAULT_REGION`` beside an
endpoint), and ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` for an S3-compatible server.
S3 requests give up after :data:`CONNECT_TIMEOUT_S` to connect, :data:`REQUEST_TIMEOUT_S`
without a byte received, and :data:`S3_ATTEMPTS` attempts, so that an unreachable endpoint
is a one-line error within seconds rather than minutes; GCS requests stop retrying after
:data:`GCS_RETRY_S` (credentials from ``GOOGLE_APPLICATION_CREDENTIALS`` or the metadata
server, as the Google client finds them).

A URI's path is taken as it is written (no ``?query`` and no percent-decoding): ``?``, ``*``
and ``[..]`` are glob characters, as in a local path.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from bamql.errors import IngestError

#: schemes read through pyarrow.fs (gcs is pyarrow's other name for gs)
SCHEMES = ("s3", "gs", "gcs", "hdfs", "file")

#: seconds to connect to an S3 endpoint
CONNECT_TIMEOUT_S = 5.0
#: seconds an S3 request may wait without receiving a byte
REQUEST_TIMEOUT_S = 10.0
#: attempts per S3 request (the first and the retries)
S3_ATTEMPTS = 3
#: seconds a GCS request may keep retrying
GCS_RETRY_S = 20.0

_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://([^/]*)(/.*)?$", re.DOTALL)
_GLOB = re.compile(r"[*?\[]")
#: the environment that decides which filesystem a URI gets (a change makes a new one)
_ENV = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION",
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
        "GOOGLE_APPLICATION_CREDENTIALS", "STORAGE_EMULATOR_HOST")


def is_uri(text: str) -> bool:
    """Whether ``text`` starts with a URL scheme (``name://``)."""
    return _URI.match(text) is not None


@dataclass(frozen=True)
class RemotePath:
    """One file named by a URI, with the size and modification time its listing gave
    (not part of its identity: two paths are equal when their URIs are)."""

    uri: str
    size: int = field(default=-1, compare=False)
    mtime_ns: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return self.uri

    @property
    def name(self) -> str:
        return PurePosixPath(self._parts[2]).name

    @property
    def suffix(self) -> str:
        return PurePosixPath(self._parts[2]).suffix

    def resolve(self) -> RemotePath:
        """The path itself (a URI is absolute)."""
        return self

    @property
    def _parts(self) -> tuple[str, str, str]:
        return split(self.uri)

    @property
    def filesystem(self):
        """The ``pyarrow.fs.FileSystem`` that holds the file."""
        scheme, authority, _ = self._parts
        return filesystem(scheme, authority, self.uri)

    @property
    def fs_path(self) -> str:
        """The file's path on :attr:`filesystem`."""
        scheme, authority, path = self._parts
        return fs_path(scheme, authority, path, self.uri)

    @property
    def is_local(self) -> bool:
        """Whether the file is on the local filesystem (a ``file://`` URI)."""
        return self._parts[0] == "file"

    def open_input_file(self):
        """The file opened for random access (a ``pyarrow.NativeFile``)."""
        try:
            return self.filesystem.open_input_file(self.fs_path)
        except (OSError, ValueError) as e:
            raise error(self.uri, e) from None

    def open_input_stream(self):
        """The file opened for reading front to back (a ``pyarrow.NativeFile``)."""
        try:
            return self.filesystem.open_input_stream(self.fs_path)
        except (OSError, ValueError) as e:
            raise error(self.uri, e) from None


def split(uri: str) -> tuple[str, str, str]:
    """``uri`` as (scheme in lower case, authority, path from its ``/``); a scheme that
    pyarrow.fs does not read for bamql is a one-line error."""
    m = _URI.match(uri)
    if m is None:
        raise IngestError(f"{uri}: not a URI (scheme://bucket/path)")
    scheme = m.group(1).lower()
    if scheme not in SCHEMES:
        raise IngestError(f"{uri}: {scheme}:// is not supported (bamql reads s3://, gs://, "
                          "hdfs://, file:// and local paths); copy the files to one of those")
    return scheme, m.group(2), m.group(3) or "/"


@functools.lru_cache(maxsize=64)
def _filesystem(scheme: str, authority: str, env: tuple) -> tuple[object, str]:
    from pyarrow import fs

    f, root = fs.FileSystem.from_uri(f"{scheme}://{authority}/")
    return _with_timeouts(f), root


def _with_timeouts(f):
    """``f`` (an S3 or GCS filesystem from ``from_uri``, which read the environment) made
    again with bamql's timeouts and retries; ``f`` itself where its options cannot be
    read (the reduction that pickles it)."""
    import datetime

    from pyarrow import fs

    if isinstance(f, fs.S3FileSystem):
        kind, extra = fs.S3FileSystem, {
            "connect_timeout": CONNECT_TIMEOUT_S, "request_timeout": REQUEST_TIMEOUT_S,
            "retry_strategy": fs.AwsStandardS3RetryStrategy(max_attempts=S3_ATTEMPTS)}
    elif isinstance(f, fs.GcsFileSystem):
        kind, extra = fs.GcsFileSystem, {
            "retry_time_limit": datetime.timedelta(seconds=GCS_RETRY_S)}
    else:
        return f
    try:
        _, (opts,) = f.__reduce__()
        return kind(**{**opts, **extra})
    except (TypeError, ValueError):
        return f


def filesystem(scheme: str, authority: str, uri: str):
    """The filesystem of ``scheme://authority`` (one per scheme, authority and credential
    environment, reused); its failure is a one-line error naming ``uri``."""
    try:
        return _filesystem(scheme, authority, tuple(os.environ.get(k) for k in _ENV))[0]
    except (OSError, ValueError) as e:
        raise error(uri, e) from None


def fs_path(scheme: str, authority: str, path: str, uri: str) -> str:
    """The path on the filesystem of ``scheme://authority`` that ``path`` names."""
    try:
        root = _filesystem(scheme, authority, tuple(os.environ.get(k) for k in _ENV))[1]
    except (OSError, ValueError) as e:
        raise error(uri, e) from None
    return (root.rstrip("/") + "/" + path.lstrip("/")).rstrip("/") or "/"


def error(uri: str, e: BaseException) -> IngestError:
    """``e``, raised while reaching ``uri``, as one line that names the URL and says what
    failed: no such bucket or object, access denied, no credentials, an endpoint that
    cannot be reached or timed out, a filesystem that cannot load."""
    text = str(e).strip()
    up = text.upper()
    detail = text.splitlines()[0] if text else type(e).__name__
    if isinstance(e, FileNotFoundError):
        why = "no such file or object"
    elif "NO_SUCH_BUCKET" in up or "NOSUCHBUCKET" in up or "BUCKET DOES NOT EXIST" in up:
        why = "no such bucket"
    elif "ACCESS_DENIED" in up or "ACCESSDENIED" in up or "FORBIDDEN" in up \
            or "PERMISSION" in up or isinstance(e, PermissionError):
        why = "access denied" + _credentials_hint(uri)
    elif "CREDENTIALS" in up or "INVALIDACCESSKEYID" in up or "SIGNATUREDOESNOTMATCH" in up \
            or "OAUTH2" in up or "AUTHENTICATE" in up:
        why = "no valid credentials" + _credentials_hint(uri)
    elif "CURLCODE: 28" in up or "TIMEOUT WAS REACHED" in up or "TIMED OUT" in up:
        why = f"the endpoint{_endpoint(uri)} did not answer in time"
    elif "NETWORK_CONNECTION" in up or "COULD NOT CONNECT" in up or "RESOLVE" in up \
            or "CURLCODE" in up:
        why = f"cannot reach the endpoint{_endpoint(uri)}"
    elif "LIBJVM" in up or "LIBHDFS" in up:
        why = "HDFS needs Java and libhdfs (set JAVA_HOME, HADOOP_HOME and CLASSPATH)"
    else:
        why = detail
    return IngestError(f"cannot read {uri}: {why}")


def _endpoint(uri: str) -> str:
    if not uri.lower().startswith("s3://"):
        return ""
    url = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    return f" {url}" if url else ""


def _credentials_hint(uri: str) -> str:
    """A note when no credentials are in sight: for S3 (requests then go unsigned) and
    GCS."""
    if uri.lower().startswith(("gs://", "gcs://")):
        return "" if os.environ.get("GOOGLE_APPLICATION_CREDENTIALS") else \
            " (set GOOGLE_APPLICATION_CREDENTIALS to a service account's key file)"
    if not uri.lower().startswith("s3://"):
        return ""
    if any(os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_PROFILE",
                                        "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
                                        "AWS_SHARED_CREDENTIALS_FILE")):
        return ""
    if os.path.exists(os.path.expanduser("~/.aws/credentials")):
        return ""
    return " (no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, " \
           "or AWS_PROFILE)"


def _visible(rel: str) -> bool:
    """Whether a file at ``rel`` below a directory is a data file: no part is hidden
    (``.x``) or a marker (``_SUCCESS``, ``_temporary``), as Spark and DuckDB skip."""
    return not any(part.startswith((".", "_")) for part in rel.split("/"))


def _remote(uri_root: str, root: str, info) -> RemotePath:
    """The RemotePath of the file ``info`` lists, ``root`` being the filesystem path of
    ``uri_root`` (``scheme://authority``)."""
    rel = info.path[len(root.rstrip("/")):].lstrip("/")
    mtime = info.mtime_ns if info.mtime_ns is not None else 0
    return RemotePath(f"{uri_root}/{rel}", info.size, mtime)


def match(pattern: list[str], parts: list[str]) -> bool:
    """Whether path components ``parts`` match glob components ``pattern`` as Python's
    ``glob(recursive=True, include_hidden=True)`` matches a local path: ``*``, ``?`` and
    ``[..]`` within a component, ``**`` as a whole component for any number of them."""
    if not pattern:
        return not parts
    p = pattern[0]
    if p == "**":
        return any(match(pattern[1:], parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], p) and match(pattern[1:], parts[1:])


def expand(spec: str, formats: tuple[str, ...]) -> list[RemotePath]:
    """The files that one URI names, sorted: a file, a directory (its files with an
    extension of ``formats``, recursively, hidden ones skipped) or a glob (matched as a
    local glob is, by listing below its fixed prefix). Nothing found is a one-line error."""
    from pyarrow import fs

    scheme, authority, path = split(spec)
    if _GLOB.search(authority):
        raise IngestError(f"{spec}: a glob in the bucket or host name is not supported")
    f = filesystem(scheme, authority, spec)
    root = fs_path(scheme, authority, "/", spec)
    uri_root = f"{scheme}://{authority}"
    full = fs_path(scheme, authority, path, spec)
    try:
        if _GLOB.search(path):
            parts = [p for p in path.split("/") if p]
            k = next(i for i, p in enumerate(parts) if _GLOB.search(p))
            base = root.rstrip("/") + "/" + "/".join(parts[:k])
            rest = parts[k:]
            recursive = len(rest) > 1 or "**" in rest[0]
            listed = f.get_file_info(fs.FileSelector(base.rstrip("/") or "/", recursive=recursive,
                                                     allow_not_found=True))
            hits = []
            for info in listed:
                if info.type != fs.FileType.File:
                    continue
                rel = info.path[len(base.rstrip("/")):].lstrip("/")
                if match(rest, [p for p in rel.split("/") if p]):
                    hits.append(_remote(uri_root, root, info))
            if not hits:
                info = f.get_file_info(full)  # a file whose name only looks like a glob
                if info.type == fs.FileType.File:
                    return [_remote(uri_root, root, info)]
                _check_bucket(f, scheme, authority, spec)
                raise IngestError(f"no files match {spec}")
            return sorted(hits, key=lambda r: r.uri)
        info = f.get_file_info(full)
        if info.type == fs.FileType.File:
            return [_remote(uri_root, root, info)]
        if info.type == fs.FileType.Directory:
            listed = f.get_file_info(fs.FileSelector(full, recursive=True))
            base = full.rstrip("/")
            hits = [_remote(uri_root, root, i) for i in listed
                    if i.type == fs.FileType.File
                    and PurePosixPath(i.path).suffix.lower() in formats
                    and _visible(i.path[len(base):].lstrip("/"))]
            if not hits:
                raise IngestError(f"directory {spec} holds no Parquet, ORC or CSV files")
            return sorted(hits, key=lambda r: r.uri)
        _check_bucket(f, scheme, authority, spec)
        raise IngestError(f"source {spec} does not exist")
    except (OSError, ValueError) as e:
        raise error(spec, e) from None


def _check_bucket(f, scheme: str, authority: str, spec: str) -> None:
    """A missing bucket is said as such, not as a missing object."""
    from pyarrow import fs

    if scheme in ("s3", "gs", "gcs") and authority \
            and f.get_file_info(authority).type == fs.FileType.NotFound:
        raise IngestError(f"cannot read {spec}: no such bucket {authority!r}")


def stat(p: RemotePath) -> RemotePath:
    """``p`` with its size and modification time read now (one request)."""
    from pyarrow import fs

    try:
        info = p.filesystem.get_file_info(p.fs_path)
    except (OSError, ValueError) as e:
        raise error(p.uri, e) from None
    if info.type != fs.FileType.File:
        raise IngestError(f"source {p.uri} does not exist")
    return RemotePath(p.uri, info.size, info.mtime_ns or 0)
