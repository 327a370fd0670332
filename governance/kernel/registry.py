"""The declared wiring between layers (after NetBox's ``netbox/registry.py``).

Imports only go down the layers (tests/governance/test_architecture.py), yet a lower layer
sometimes needs what a higher one knows: jobs ask memory for a ragContext, a session's prompt asks
memory for its step-0 block, the inbox asks each app what its kind of item means, the input guard
asks the API which media types an operation declares. Each such need is a *store* declared here by
name, typed by the layer that reads it, and filled by the layer that knows, in its
``AppConfig.ready()``. Every store and every entry is listed in ``STORES`` with the module that
filled it, so the architecture test reads the wiring instead of guessing it from settings strings.

Pure: no Django import, so the stores read the same in any process.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def _caller_module(skip: str = "") -> str:
    """The module that called the registering method: the first frame outside this module and
    outside ``skip`` (the store's own module, when it offers a function that registers)."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_globals.get("__name__") in {__name__, skip}:
        frame = frame.f_back
    return str(frame.f_globals.get("__name__", "?"))


@dataclass(eq=False)
class Store:
    """What every store tells the architecture test: its name, what it is for, and which module
    declared it and which filled it."""

    name: str
    doc: str
    declared_in: str
    filled_from: list[str] = field(default_factory=list)


@dataclass(eq=False)
class Slot(Store, Generic[T]):
    """One provider, given once: a second, different one is a wiring mistake raised at start."""

    _value: T | None = field(default=None, repr=False)

    def provide(self, value: T) -> None:
        if self._value is not None and self._value is not value:
            raise ValueError(f"{self.name} is already provided by {self.filled_from[0]}")
        if self._value is None:
            self._value = value
            self.filled_from.append(_caller_module(self.declared_in))

    def get(self) -> T:
        if self._value is None:
            raise LookupError(f"{self.name} has no provider: the app that provides it is not installed")
        return self._value


@dataclass(eq=False)
class Listeners(Store, Generic[T]):
    """Callables told of an event, in the order they connected; connecting twice is once."""

    _listeners: list[T] = field(default_factory=list, repr=False)

    def connect(self, listener: T) -> None:
        if listener not in self._listeners:
            self._listeners.append(listener)
            self.filled_from.append(_caller_module(self.declared_in))

    def __iter__(self) -> Iterator[T]:
        return iter(tuple(self._listeners))


@dataclass(eq=False)
class Keyed(Store, Generic[T]):
    """Entries by code, each declared once: a second, different one for a code is raised at start."""

    _entries: dict[str, T] = field(default_factory=dict, repr=False)

    def register(self, code: str, entry: T) -> None:
        known = self._entries.get(code)
        if known is None:
            self._entries[code] = entry
            self.filled_from.append(_caller_module(self.declared_in))
        elif known != entry:
            raise ValueError(f"{self.name}: {code!r} is declared twice")

    def find(self, code: str) -> T | None:
        return self._entries.get(code)

    def values(self) -> tuple[T, ...]:
        return tuple(self._entries.values())


STORES: dict[str, Store] = {}


def _declare(store: Store) -> None:
    if store.name in STORES:
        raise ValueError(f"store {store.name!r} is declared twice")
    STORES[store.name] = store


def slot(name: str, doc: str) -> Slot[Any]:
    store: Slot[Any] = Slot(name, doc, declared_in=_caller_module())
    _declare(store)
    return store


def listeners(name: str, doc: str) -> Listeners[Any]:
    store: Listeners[Any] = Listeners(name, doc, declared_in=_caller_module())
    _declare(store)
    return store


def keyed(name: str, doc: str) -> Keyed[Any]:
    store: Keyed[Any] = Keyed(name, doc, declared_in=_caller_module())
    _declare(store)
    return store
