"""Settings describe, entry points prepare: importing the settings starts no database and writes
no file; `manage.py` (any command) prepares var/, the local secret key and the embedded
PostgreSQL, stops the server again if it started it, and every later process of the install
signs with the same key."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from governance.kernel import embedded_db
from tests.support.processes import BASE_DIR

pytestmark = pytest.mark.process


def child_env(var_dir) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "SECRET_KEY")}
    env.update(DJANGO_SETTINGS_MODULE="controlplane.settings", VAR_DIR=str(var_dir))
    return env


def run_python(code: str, var_dir) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=BASE_DIR, env=child_env(var_dir), capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_importing_the_settings_starts_nothing_and_writes_nothing(tmp_path):
    var_dir = tmp_path / "var"

    out = run_python(
        "import django; django.setup(); from django.conf import settings; print(settings.DATABASES['default']['HOST'])",
        var_dir,
    )

    assert out == str(var_dir / "pgdata")
    assert not var_dir.exists()


def test_a_management_command_prepares_the_install_once(tmp_path):
    var_dir = tmp_path / "var"
    try:
        command = [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from django.conf import settings; from django.db import connection; "
            "connection.ensure_connection(); print(settings.SECRET_KEY)",
        ]
        first = subprocess.run(
            command, cwd=BASE_DIR, env=child_env(var_dir), capture_output=True, text=True, timeout=180
        )
        second = subprocess.run(
            command, cwd=BASE_DIR, env=child_env(var_dir), capture_output=True, text=True, timeout=180
        )
        assert first.returncode == 0, first.stderr
        assert second.returncode == 0, second.stderr
        key = (var_dir / "secret_key").read_text().strip()
        assert first.stdout.split()[-1] == second.stdout.split()[-1] == key
        assert len(key) >= 50
        assert oct((var_dir / "secret_key").stat().st_mode)[-3:] == "600"
        # Each command started the server it needed and stopped it: nothing is left running.
        assert "embedded_db] stopped" in first.stderr
        assert "embedded_db] stopped" in second.stderr
        assert not (var_dir / "pgdata" / "postmaster.pid").exists()
    finally:
        embedded_db.stop(var_dir / "pgdata")
