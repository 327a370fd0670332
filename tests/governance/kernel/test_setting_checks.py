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


def test_manage_py_check_deploy_runs_the_governance_checks(tmp_path):
    """In a process of its own, as an operator runs it: the checks register when the app loads,
    not only when a test imports their module."""
    import subprocess

    from tests.support.processes import BASE_DIR, PYTHON, process_env

    child_env = process_env(
        tmp_path / "var",
        DATABASE_URL="postgresql://nobody@127.0.0.1:1/unused",  # `check` never connects
        CELERY_TASK_TIME_LIMIT="600",
        CELERY_VISIBILITY_TIMEOUT="60",
    )
    result = subprocess.run(
        [PYTHON, "manage.py", "check", "--deploy"],
        cwd=BASE_DIR,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "governance.W001" in result.stderr + result.stdout  # the key generated under var/
    assert "governance.W005" in result.stderr + result.stdout  # the visibility timeout
