"""A store's keyed seal: an HMAC-SHA256 of its manifest under this machine's secret key.

The manifest's ``sha256`` (``format.digest``) tells damage from a sound file, but anyone can
compute it again after an edit. From format version 5 ``ingest`` also writes ``hmac``: the
same canonical body signed with a key that only this machine (this user's cache directory)
holds, derived from this user's secret key (``bamql.secretkey.machine_key``: one secret, kept
in one place). At open (``PageStore``) a store is trusted when its ``hmac`` is this machine's
seal of its manifest, or when this machine verified that exact manifest in full before (a
record in ``<cache dir>/stores``, named by the seal the manifest would have here). Any other
store (made on another machine or by another user, written by an older bamql as format 4, or
edited after ingest and sealed again) is checked at open: ``PageStore`` refuses it in one line
unless it passes the cheap consistency checks and its full ``verify``, after which it opens
with a one-line note (``StoreWarning``) and is trusted here from then on.

Where there is no key (the kernel cache directory is unusable: open to other users, or not
writable; the kernel cache notes it), ``ingest`` writes no ``hmac`` and nothing is trusted or
remembered: every store then gets the cheap checks at every open, without the full verify
(which would read every page at every open), and ``bamql verify`` checks one in full.

Neither the records nor the key can be forged without the key, which a process running as
the same user can read (as it can rewrite bamql itself): the seal guards against edits by
others and by tools, not against this user's own programs.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import threading
import warnings
from pathlib import Path

from bamql.errors import StoreWarning

#: the manifest's field that holds its keyed seal
FIELD = "hmac"
#: fields a seal does not cover (where the seals are kept)
SEAL_FIELDS = ("sha256", FIELD)
#: verified stores remembered; past this, the oldest tenth are forgotten (verified again)
MAX_RECORDS = 4096

_lock = threading.Lock()
_key: bytes | None = None
_key_read = False


def body(doc: dict) -> bytes:
    """The canonical bytes a seal covers: every field of ``doc`` but the seals, keys sorted."""
    return json.dumps({k: v for k, v in doc.items() if k not in SEAL_FIELDS},
                      sort_keys=True).encode()


def store_key() -> bytes | None:
    """This machine's key for store seals (None where the cache directory is not usable)."""
    global _key, _key_read
    with _lock:
        if not _key_read:
            from bamql.secretkey import machine_key

            _key, _key_read = machine_key("page-store seal"), True
        return _key


def seal(doc: dict) -> str | None:
    """This machine's seal of the manifest ``doc`` (hex), or None without a key."""
    key = store_key()
    return None if key is None else hmac.new(key, body(doc), hashlib.sha256).hexdigest()


def _records() -> Path:
    from bamql.config import Config

    return Config.from_env().cache_dir / "stores"


def trusted(doc: dict, tag: str | None) -> bool:
    """Whether the manifest ``doc`` (whose seal here is ``tag``) is sealed with this machine's
    key, or was verified here in full before."""
    if tag is None:
        return False
    if doc.get("format_version", 0) >= 5 and isinstance(doc.get(FIELD), str) and \
            hmac.compare_digest(doc[FIELD], tag):
        return True
    try:
        return (_records() / tag).is_file()
    except OSError:
        return False


def remember(tag: str | None) -> bool:
    """Record that the manifest sealed here as ``tag`` was verified in full, so that later
    opens trust it; False where nothing can be recorded (no key, or an unwritable cache)."""
    if tag is None:
        return False
    d = _records()
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.close(os.open(d / tag, os.O_CREAT | os.O_WRONLY, 0o600))
    except OSError:
        return False
    try:
        names = os.listdir(d)
        if len(names) > MAX_RECORDS:  # bounded: the oldest are verified again if opened
            old = sorted(names, key=lambda n: os.stat(d / n).st_mtime)
            for n in old[: len(names) - MAX_RECORDS * 9 // 10]:
                os.unlink(d / n)
    except OSError:  # another process pruning at the same time
        pass
    return True


def note(msg: str) -> None:
    """A one-line note about a store's seal (``bamql: note: ...`` on the command line)."""
    warnings.warn(msg, StoreWarning, stacklevel=3)
