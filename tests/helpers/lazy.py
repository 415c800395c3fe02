"""Modules loaded on first use: nbformat (through jsonschema's format checkers) and nbclient
cost seconds to import, which every test run would pay at collection, fast layer included."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any


class _Deferred(ModuleType):
    """Stands for the module of the same name until one of its public attributes is read."""

    def __getattr__(self, attr: str) -> Any:
        # pytest's collection reads `_mock_name` and `__wrapped__` of every module global (looking
        # for fixtures): such probes must not import the module (importlib's LazyLoader would).
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(importlib.import_module(self.__name__), attr)


def lazy_import(name: str) -> ModuleType:
    """``name``, imported only when one of its public attributes is first read."""
    if name in sys.modules:
        return sys.modules[name]
    assert importlib.util.find_spec(name) is not None, f"{name} is not installed"
    return _Deferred(name)
