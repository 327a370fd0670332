"""Every effect the state machine can ask for has exactly one handler in sessions/effects.py, and the
table names nothing else: a new effect kind without its handler fails here, not in production."""

from __future__ import annotations

import inspect

from sessions import effects, machine
from sessions.machine import EffectKind


def test_every_effect_kind_has_a_handler():
    assert set(effects.HANDLERS) == set(EffectKind)


def test_each_handler_is_the_effects_function_of_that_name():
    for kind, handler in effects.HANDLERS.items():
        assert handler is getattr(effects, kind.value)


def test_the_machine_asks_only_for_declared_effects():
    """Effects are built with the enum: no string kind is left in the table's handlers."""
    source = inspect.getsource(machine)
    assert 'effect("' not in source
