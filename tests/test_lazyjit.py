"""``bamql.lazyjit``: numba compiles with Python's cyclic garbage collector paused."""

from __future__ import annotations

import gc
import threading

import pytest

from bamql.lazyjit import guard_compiles, njit


def test_the_collector_is_paused_while_numba_compiles_and_only_then():
    import numba.core.event as ev

    guard_compiles()
    seen: list[bool] = []

    class Watch(ev.Listener):
        def on_start(self, event) -> None:
            seen.append(gc.isenabled())

        def on_end(self, event) -> None:
            seen.append(gc.isenabled())

    @njit
    def plus(x):
        return x + 1

    @njit
    def broken(x):
        return x.no_such_attribute

    watch = Watch()
    ev.register("numba:compile", watch)
    try:
        assert gc.isenabled()
        outs: list[int] = []
        threads = [threading.Thread(target=lambda: outs.append(plus(2))) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert outs == [3, 3, 3, 3]
        with pytest.raises(Exception, match="no_such_attribute"):
            broken(1)
    finally:
        ev.unregister("numba:compile", watch)
    assert seen and not any(seen)  # off inside every compile, the failed one too
    assert gc.isenabled()  # and on again after them
