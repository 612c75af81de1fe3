"""This machine's secret keys: one random key per user in a private directory, from which
each part of bamql that signs what it writes derives its own (``machine_key``: the page
store's seal, ``storage.seal``), and the private-file helpers that keep such files (the
kernel cache's signed files and its own key, ``kernels.diskcache``).

A key file is 32 random bytes, ``0600``, in a directory this user owns and only this user
can write; a key file that others can read, or that is damaged, is replaced. This guards
against other users and against damage, not against a process running as the same user.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import threading
from pathlib import Path

from bamql.config import Config

KEY_NAME = ".hmac-key"
TAG = 32  # bytes of an HMAC-SHA256 key and tag
_lock = threading.Lock()
_key: bytes | None = None
_read = False


def private(p: Path, what: str) -> str | None:
    """None when ``p`` is owned by this user and nobody else can write it (a directory) or
    read it (a file), else why not."""
    st = os.stat(p)
    if st.st_uid != os.geteuid():
        return f"{what} {p} belongs to another user (uid {st.st_uid})"
    mask = 0o022 if stat.S_ISDIR(st.st_mode) else 0o077
    if st.st_mode & mask:
        return (f"{what} {p} is open to other users (mode {stat.S_IMODE(st.st_mode):04o}; "
                f"chmod {'700' if mask == 0o022 else '600'} it)")
    return None


def write_file(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write ``data`` to ``path`` whole (a reader never sees half a file): into a private
    temporary file beside it, then renamed over it. The temporary file goes on failure."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def load_key(d: Path) -> bytes:
    """The directory's HMAC key, made on first use (32 random bytes, ``0600``)."""
    path = d / KEY_NAME
    try:
        key: bytes | None = path.read_bytes()
    except FileNotFoundError:
        key = None
    if key is not None and len(key) == TAG and private(path, "key") is None:
        return key
    new = secrets.token_bytes(TAG)
    if key is None:  # missing: made once, by whichever process comes first
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.new")
        try:
            write_file(tmp, new)
            os.link(tmp, path)
            return new
        except FileExistsError:  # another process made it meanwhile: use that one
            return load_key(d)
        finally:
            tmp.unlink(missing_ok=True)
    # damaged or readable by others: a new key (files signed with the old one are rebuilt)
    write_file(path, new)
    return new


def machine_key(purpose: str) -> bytes | None:
    """A secret key for ``purpose``, derived from this user's key in ``<cache dir>/keys``
    (made on first use); None where that directory cannot be made private."""
    global _key, _read
    with _lock:
        if not _read:
            _read = True
            d = Config.from_env().cache_dir / "keys"
            try:
                d.mkdir(mode=0o700, parents=True, exist_ok=True)
                if private(d, "key directory") is None:
                    _key = load_key(d)
            except OSError:  # cannot be made or written: no key
                _key = None
        if _key is None:
            return None
        return hmac.new(_key, b"bamql key for " + purpose.encode(), hashlib.sha256).digest()
