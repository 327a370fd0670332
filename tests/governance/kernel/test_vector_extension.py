"""pgvector 0.8.0 or later: `manage.py check --deploy` says when the database's is older
(governance.W006), and what to do about it."""

from __future__ import annotations

import pytest
from django.core import checks
from django.db import connection

from governance.kernel import checks as kernel_checks
from governance.kernel import vector_extension


@pytest.mark.parametrize(
    ("version", "parsed"),
    [("0.8.5", (0, 8, 5)), ("0.10.0", (0, 10, 0)), ("0.8.0-dev", (0, 8, 0)), (" 1.0 ", (1, 0))],
)
def test_versions_are_read_as_numbers(version, parsed):
    assert vector_extension.parse(version) == parsed


def test_a_later_minor_with_two_digits_is_newer_not_older():
    assert not vector_extension.older("0.10.0", "0.8.0")
    assert vector_extension.older("0.7.4", "0.8.0")


@pytest.mark.parametrize(
    ("installed", "available"),
    [("0.8.0", "0.8.0"), ("0.8.5", "0.8.5"), ("0.10.1", "0.10.1"), (None, "0.8.5")],
)
def test_a_recent_enough_pgvector_is_no_problem(installed, available):
    """Not installed yet but 0.8.5 on the server: the first migration's CREATE EXTENSION installs it."""
    assert vector_extension.problem(installed, available) is None


def test_an_installed_version_older_than_the_servers_files_is_told_to_update():
    what, fix = vector_extension.problem("0.6.2", "0.8.5")

    assert "0.6.2" in what
    assert "0.8.0" in what
    assert "ALTER EXTENSION vector UPDATE" in fix


def test_a_server_with_only_old_files_is_told_to_install_a_newer_pgvector():
    what, fix = vector_extension.problem("0.6.2", "0.6.2")
    assert "0.6.2" in what
    assert "0.8.0" in what
    assert "Install pgvector 0.8.0 or later" in fix

    what, fix = vector_extension.problem(None, "0.7.4")  # not created yet: the first migration will
    assert "0.7.4" in what
    assert "Install pgvector 0.8.0 or later" in fix
    assert "manage.py migrate" in fix


def test_a_server_without_pgvector_is_told_to_install_it():
    what, fix = vector_extension.problem(None, None)

    assert "not installed" in what
    assert "Install pgvector 0.8.0 or later" in fix


def test_the_check_warns_with_its_id_and_the_fix():
    [warning] = kernel_checks.vector_extension_warnings("0.6.2", "0.8.5")

    assert warning.id == "governance.W006"
    assert isinstance(warning, checks.Warning)
    assert "0.6.2" in warning.msg
    assert "ALTER EXTENSION vector UPDATE" in warning.hint
    assert kernel_checks.vector_extension_warnings("0.8.5", "0.8.5") == []


@pytest.mark.django_db
def test_the_embedded_server_passes_the_deploy_check():
    with connection.cursor() as cursor:
        cursor.execute(vector_extension.VERSIONS_SQL)
        installed, available = cursor.fetchone()
    assert (installed, available) == ("0.8.5", "0.8.5")

    found = checks.run_checks(include_deployment_checks=True)

    assert "governance.W006" not in [message.id for message in found]


def test_the_check_runs_with_deploy_only():
    """Every `manage.py` command runs the checks; only `check --deploy` asks the database."""
    deploy_only = {check.__name__ for check in checks.registry.registry.get_checks(include_deployment_checks=True)}
    always = {check.__name__ for check in checks.registry.registry.get_checks(include_deployment_checks=False)}

    assert "vector_extension_recent_enough" in deploy_only - always
