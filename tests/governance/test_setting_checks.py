"""A setting with a fixed set of values stops the start on a typo (governance.E001) instead of
falling back on a default nobody chose."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from governance.kernel.checks import CHOICES, enumerated_settings_are_known
from memory.embeddings import BACKEND_NAMES


@pytest.mark.parametrize(
    ("name", "typo"),
    [
        ("JOB_LOCK_BACKOFF", "exponentiel"),
        ("JOB_KEY_STRATEGY", "composit"),
        ("LEARNINGS_PROMOTION_MODE", "Auto"),
        ("EMBEDDING_BACKEND", "olama"),
    ],
)
def test_a_typo_in_an_enumerated_setting_is_an_error(settings, name, typo):
    setattr(settings, name, typo)

    errors = enumerated_settings_are_known(None)

    assert [(error.id, error.msg) for error in errors] == [
        ("governance.E001", f"{name}={typo!r} is not one of: {', '.join(CHOICES[name])}.")
    ]
    with pytest.raises(SystemCheckError, match=name):
        call_command("check")


def test_the_defaults_pass():
    assert enumerated_settings_are_known(None) == []


def test_the_embedding_choices_are_the_backends_that_exist():
    assert set(CHOICES["EMBEDDING_BACKEND"]) == set(BACKEND_NAMES)
