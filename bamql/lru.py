"""A bounded least-recently-used map: the in-memory caches of plans and compiled kernels."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator


class LRU:
    """A map of at most ``limit`` entries; a lookup makes an entry the most recent, and a
    new entry past the bound drops the least recent. Safe to share between threads."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("an LRU holds at least one entry")
        self.limit = limit
        self._d: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, default=None):
        """The value of ``key`` (now the most recent), or ``default``."""
        with self._lock:
            try:
                self._d.move_to_end(key)
            except KeyError:
                return default
            return self._d[key]

    def put(self, key: Hashable, value) -> None:
        """Keep ``value`` under ``key`` as the most recent entry."""
        with self._lock:
            self._d[key] = value
            self._d.move_to_end(key)
            while len(self._d) > self.limit:
                self._d.popitem(last=False)

    def pop(self, key: Hashable, default=None):
        with self._lock:
            return self._d.pop(key, default)

    def clear(self) -> None:
        with self._lock:
            self._d.clear()

    def values(self) -> list:
        with self._lock:
            return list(self._d.values())

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._d

    def __len__(self) -> int:
        return len(self._d)

    def __iter__(self) -> Iterator:
        with self._lock:
            return iter(list(self._d))
