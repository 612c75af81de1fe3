"""``numba.njit`` on first call: a module of compiled helpers imports without numba.

numba takes a third of a second to import and more to load a cached function, so a module
that only defines compiled helpers beside plain ones (``storage.packing``'s page sizes,
``physical.ranges``' row ranges) would make every command that touches it pay for numba,
even one that never runs a helper (``bamql sql ... "SELECT count(*) ..."``, answered from
the table's metadata). Decorated with :func:`njit` from here instead, a function is a
:class:`LazyJit` until its first call (or first look at a dispatcher attribute), which
imports numba and hands the function to ``numba.njit`` with the same options; numba's
on-disk cache (``cache=True``) keys it by the same file and name as before.

A compiled function that calls another resolves it as a global of its module at compile
time, so before a function is compiled each :class:`LazyJit` among the globals it names is
compiled and put in that global's place (and :data:`prange` in ``numba.prange``'s), and
numba sees dispatchers, as it would have at import.

A function's compiled code loaded from numba's disk cache does not need numba's whole
target context: numba refreshes it first all the same, importing and registering every
typing and lowering registry it has (0.3-0.4 s on the 2-core VM, the largest part of a
one-shot query's kernel time). :func:`fast_loads` has a dispatcher load its cached code
with only what that code links against (numba's runtime, the hash secrets), and where that
fails, load it numba's way. Compiling still refreshes the context, in numba's compiler.
"""

from __future__ import annotations

import gc
import threading
import types
from collections.abc import Callable
from typing import Any

_lock = threading.RLock()
_gc_lock = threading.Lock()


def prange(*args):
    """``numba.prange`` in a function compiled through :func:`njit` (``range`` when the
    Python function runs uncompiled)."""
    return range(*args)


class LazyJit:
    """A Python function and the options of its ``numba.njit``, compiled on first use."""

    def __init__(self, py: Callable, options: dict) -> None:
        self.py_func = py
        self.options = options
        self._disp = None
        self.__name__ = py.__name__
        self.__qualname__ = py.__qualname__
        self.__module__ = py.__module__
        self.__doc__ = py.__doc__
        self.__wrapped__ = py

    @property
    def dispatcher(self):
        """numba's dispatcher of the function (numba imported, globals resolved)."""
        disp = self._disp
        if disp is None:
            with _lock:
                if self._disp is None:
                    import numba

                    guard_compiles()
                    _resolve(self.py_func.__code__, self.py_func.__globals__, numba)
                    disp = numba.njit(**self.options)(self.py_func)
                    if self.options.get("cache"):
                        fast_loads(disp)
                    self._disp = disp
                disp = self._disp
        return disp

    def __call__(self, *args, **kwargs):
        return self.dispatcher(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # signatures, overloads, py_func's kin
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.dispatcher, name)

    def __repr__(self) -> str:
        state = "compiled" if self._disp is not None else "not compiled yet"
        return f"<bamql.lazyjit {self.__module__}.{self.__qualname__} ({state})>"


def _resolve(code: types.CodeType, namespace: dict, numba) -> None:
    """Put dispatchers in the place of the LazyJit globals ``code`` names (and of its
    nested functions), and ``numba.prange`` in :data:`prange`'s."""
    for name in code.co_names:
        value = namespace.get(name)
        if isinstance(value, LazyJit):
            namespace[name] = value.dispatcher
        elif value is prange:
            namespace[name] = numba.prange
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _resolve(const, namespace, numba)


def fast_loads(disp) -> None:
    """Have numba dispatcher ``disp`` (a CPU one, caching on disk) load its cached code
    without refreshing the target context (see the module's text); its cache's own
    ``load_overload`` stays the fallback."""
    cache = getattr(disp, "_cache", None)
    inner = getattr(cache, "_load_overload", None)
    if inner is None:  # no cache (a NullCache), or a numba that loads otherwise
        return
    numba_way = cache.load_overload

    def load_overload(sig, target_context):
        try:
            _linkable(target_context)
            with cache._guard_against_spurious_io_errors():
                return inner(sig, target_context)
        except Exception:  # numba's way: the registries, then the load
            return numba_way(sig, target_context)

    cache.load_overload = load_overload


def _linkable(target_context) -> None:
    """What cached code links against besides numba's helpers: the runtime (NRT, which
    numba starts in its refresh) and the hash secrets (registered when numba's hashing
    module is imported, also in its refresh)."""
    from numba.core.runtime import rtsys
    from numba.cpython import hashing  # noqa: F401

    rtsys.initialize(target_context)


_gc_paused = 0
_gc_was_on = False
_guarded: list[bool] = []


def guard_compiles() -> None:
    """Pause Python's cyclic garbage collector, process-wide, while numba compiles (from
    any thread; once per process, where bamql first imports numba). A collection that ran
    inside a compile freed llvmlite objects there and crashed the process (a segfault in
    llvmlite's ``_dispose``, under numba's compile in a thread beside others); between
    compiles, nothing of numba's is mid-use when the collector runs."""
    if _guarded:
        return
    with _lock:
        if _guarded:
            return
        from numba.core import event

        class _PauseGc(event.Listener):
            def on_start(self, ev) -> None:
                global _gc_paused, _gc_was_on
                with _gc_lock:
                    if _gc_paused == 0:
                        _gc_was_on = gc.isenabled()
                        gc.disable()
                    _gc_paused += 1

            def on_end(self, ev) -> None:
                global _gc_paused
                with _gc_lock:
                    _gc_paused -= 1
                    if _gc_paused == 0 and _gc_was_on:
                        gc.enable()

        event.register("numba:compiler_lock", _PauseGc())
        _guarded.append(True)


def compiled(f):
    """numba's dispatcher of ``f``, a :class:`LazyJit` or already a dispatcher (for compiled
    code of another module that calls it: numba must see a dispatcher there)."""
    return f.dispatcher if isinstance(f, LazyJit) else f


def njit(*args, **options):
    """``numba.njit(**options)``, applied on the function's first call: ``@njit`` or
    ``@njit(nogil=True, cache=True, ...)`` (also ``njit(**options)(function)``)."""
    if args:
        if len(args) == 1 and callable(args[0]) and not options:
            return LazyJit(args[0], {})
        raise TypeError("njit takes the function alone, or keyword options")
    return lambda py: LazyJit(py, options)
