"""What the commands' options share: sizes with units, comma-separated lists, the choices of
--floats and --compress."""

from __future__ import annotations

import argparse

from bamql.config import Compression, FloatEncoding, parse_size
from bamql.errors import BamqlError


def size(text: str) -> int:
    """'4096', '4KiB', '1MiB' into bytes (``bamql.config.parse_size``: KiB = 1024 B, KB = 1000 B)."""
    try:
        return parse_size(text, None)
    except BamqlError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def split(text: str) -> tuple[str, ...]:
    """``a, b,c`` -> ``("a", "b", "c")``."""
    return tuple(x.strip() for x in text.split(",") if x.strip())


def names(text: str | None) -> tuple[str, ...] | None:
    """An option's ``a,b,c`` as names; None (not given) stays None."""
    return None if text is None else split(text)


#: the choices of --floats and --compress, as the names argparse lists in its errors
#: (``decimals`` is for stores made for one query: ``storage.inplace``)
FLOATS = [FloatEncoding.AUTO.value, FloatEncoding.PLAIN.value]
COMPRESS = [c.value for c in Compression]
