"""A package's public names imported on first use (PEP 562): a package whose ``__init__``
names classes from heavy modules (the session, ingest) stays cheap to import, and a name is
a plain attribute once it has been looked up."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_names(package: str, names: Mapping[str, str], public: Iterable[str],
               subpackages: bool = False) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: ``names`` maps a public name to
    the module that defines it; with ``subpackages``, any other name that is a subpackage
    is imported as ``import package.name`` would."""
    public = tuple(public)

    def __getattr__(name: str) -> Any:
        if name in names:
            value = getattr(importlib.import_module(names[name]), name)
            setattr(sys.modules[package], name, value)  # imported once, then an attribute
            return value
        if subpackages and not name.startswith("_") and \
                importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(public))

    return __getattr__, __dir__
