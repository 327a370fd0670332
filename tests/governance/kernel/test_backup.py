"""Backups: `manage.py backup` then `manage.py restore` into a new database give back every product
table with the same rows, byte for byte (pgvector columns included); a restore over the database
in use needs --force and a stopped product; bad input is a clear error that leaves nothing behind."""

from __future__ import annotations

import io
import stat
from pathlib import Path

import psycopg
import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import connection, connections

from agents.models import Agent, Job
from governance.kernel import backups
from governance.kernel.principals import SYSTEM
from governance.kernel.roles import PRODUCT_APPS
from memory import learnings
from memory.models import Embedding, Learning
from sessions.models import SessionMessage
from tests.factories.governance import ContractCheckFactory
from tests.factories.memory import EmbeddingFactory
from tests.factories.sessions import AISessionFactory
from tests.support.jobs import submit_job
from tests.support.manifests import load_seed_manifests

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def _tables() -> dict[str, str]:
    """Every product table and the column it is ordered by."""
    return {
        model._meta.db_table: model._meta.pk.column
        for model in apps.get_models(include_auto_created=True)
        if model._meta.app_label in PRODUCT_APPS and model._meta.managed and not model._meta.proxy
    }


def _connect(database: str) -> psycopg.Connection:
    return psycopg.connect(backups._conninfo(database), password=connection.settings_dict["PASSWORD"] or None)


def _snapshot(database: str, tables: dict[str, str], sample: int = 25) -> dict[str, tuple[int, list[str]]]:
    """Per table: its row count and the text of its first rows (every column, as PostgreSQL prints it)."""
    with _connect(database) as conn:
        return {
            table: (
                sum(1 for _ in conn.execute(f'SELECT 1 FROM "{table}"')),
                [row[0] for row in conn.execute(f'SELECT t::text FROM "{table}" t ORDER BY "{pk}" LIMIT {sample}')],
            )
            for table, pk in tables.items()
        }


@pytest.fixture
def fleet(db) -> None:
    """Agents with manifests, jobs, learnings with vectors, sessions with messages, contract checks."""
    agents = load_seed_manifests()
    vlevel = agents["agent.seo.vlevel"]
    for n in range(3):
        submit_job(vlevel, {"urls": [f"https://shop.test/{n}"]})
    for n in range(5):
        learning = learnings.create_learning(
            actor=SYSTEM, story=f"PD-{n}", gate=3, domain="core", project="gov", tags=["t"], text=f"lesson {n}"
        )
        EmbeddingFactory.create(kind="learning", object_id=learning.pk, embedding=[0.1 * n, -1.5, 3.25e-7])
    session = AISessionFactory.create(agent=vlevel)
    for seq in range(1, 4):
        SessionMessage.objects.create(
            session=session, seq=seq, timestamp=session.created_at, sender="USER", text_content=f"é {seq} ✓"
        )
    ContractCheckFactory.create(agent=vlevel, output={"status": "ok", "nested": [1, 2.5, None]})


@pytest.fixture
def dump(fleet, tmp_path) -> Path:
    out = io.StringIO()
    call_command("backup", "--output", str(tmp_path / "fleet.dump"), stdout=out)
    path = tmp_path / "fleet.dump"
    assert out.getvalue().startswith(f"[backup] {path} (")
    return path


@pytest.fixture
def restored_name():
    name = f"{connection.settings_dict['NAME']}_copy"
    yield name
    backups.drop_database(name)


def test_a_backup_restored_into_a_new_database_has_every_row(dump, restored_name):
    tables = _tables()
    assert {"agents_agent", "agents_job", "memory_learning", "memory_embedding", "ai_sessions_sessionmessage"} <= set(
        tables
    )
    assert stat.S_IMODE(dump.stat().st_mode) == 0o600  # the dump holds key hashes and outputs
    source = _snapshot(connection.settings_dict["NAME"], tables)

    out = io.StringIO()
    call_command("restore", str(dump), "--database", restored_name, stdout=out)

    assert f"restored into the new database {restored_name}" in out.getvalue()
    copy = _snapshot(restored_name, tables)
    assert {t: n for t, (n, _) in copy.items()} == {t: n for t, (n, _) in source.items()}
    assert copy == source
    assert source["memory_embedding"][0] == 5
    assert "3.25e-07" in source["memory_embedding"][1][0]
    assert Agent.objects.count() == source["agents_agent"][0]
    assert Job.objects.count() == 3
    assert Learning.objects.count() == 5
    assert Embedding.objects.count() == 5


def test_the_default_backup_path_and_restore_name(fleet, settings, tmp_path):
    settings.BACKUP_DIR = tmp_path / "backups"
    out = io.StringIO()
    call_command("backup", stdout=out)
    [path] = (tmp_path / "backups").iterdir()
    assert path.name.startswith(connection.settings_dict["NAME"])
    assert path.suffix == ".dump"
    assert str(path) in out.getvalue()

    out = io.StringIO()
    call_command("restore", str(path), stdout=out)
    name = out.getvalue().split("the new database ")[1].split(";")[0]
    try:
        assert name.startswith(f"{connection.settings_dict['NAME']}_restored_")
        assert "EMBEDDED_DB_NAME=" + name in out.getvalue()
    finally:
        backups.drop_database(name)


def test_restoring_over_the_database_in_use_needs_force(dump):
    with pytest.raises(CommandError, match="is the database in use: restoring over it needs --force"):
        call_command("restore", str(dump), "--database", connection.settings_dict["NAME"])


def test_force_refuses_while_another_session_uses_the_database(dump):
    with _connect(connection.settings_dict["NAME"]), pytest.raises(CommandError, match="stop web, worker and beat"):
        call_command("restore", str(dump), "--force")


def test_force_replaces_the_database_and_keeps_the_previous_one(dump):
    current = connection.settings_dict["NAME"]
    Agent.objects.create(agent_id="agent.after.backup", name="after")
    connections.close_all()
    out = io.StringIO()

    call_command("restore", str(dump), "--force", stdout=out)

    replaced = out.getvalue().split("kept as ")[1].split(" ")[0]
    try:
        assert replaced.startswith(f"{current}_replaced_")
        assert not Agent.objects.filter(agent_id="agent.after.backup").exists()  # the dump's state
        assert Job.objects.count() == 3
        with _connect(replaced) as old:
            assert old.execute("SELECT count(*) FROM agents_agent WHERE agent_id = 'agent.after.backup'").fetchone()[0]
    finally:
        backups.drop_database(replaced)


def test_a_bad_dump_is_a_clear_error_and_leaves_no_database(tmp_path, restored_name):
    garbage = tmp_path / "garbage.dump"
    garbage.write_bytes(b"not a dump")
    with pytest.raises(CommandError, match=r"pg_restore failed: .*input file"):
        call_command("restore", str(garbage), "--database", restored_name)
    with _connect("postgres") as admin:
        assert not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [restored_name]).fetchone()


def test_bad_arguments_are_refused_before_anything_is_done(dump, tmp_path):
    with pytest.raises(CommandError, match="no dump at"):
        call_command("restore", str(tmp_path / "missing.dump"))
    with pytest.raises(CommandError, match="is not a database name"):
        call_command("restore", str(dump), "--database", 'x"; DROP DATABASE postgres; --')
    with pytest.raises(CommandError, match="exists: choose another --output"):
        call_command("backup", "--output", str(dump))


SPY = """#!/bin/sh
{ echo "$@"; echo "$PGPASSFILE"; stat -c %a "$PGPASSFILE"; cat "$PGPASSFILE"; env | grep -c '^PGPASSWORD='; } > "$SEEN"
for arg; do case $arg in --file=*) echo dump > "${arg#--file=}";; esac; done
"""


def test_the_password_goes_in_a_private_passfile_never_on_the_command_line(tmp_path, settings, monkeypatch):
    """pg_dump here is a stand-in that writes down what it was given: its argv, which `ps` shows
    to every user, and its passfile."""
    spy = tmp_path / "bin" / "pg_dump"
    spy.parent.mkdir()
    spy.write_text(SPY)
    spy.chmod(0o755)
    settings.BACKUP_PG_BIN_DIR = str(spy.parent)
    monkeypatch.setenv("SEEN", str(tmp_path / "seen"))
    monkeypatch.setenv("PGPASSWORD", "from-the-shell")
    monkeypatch.setitem(connection.settings_dict, "PASSWORD", r"s3:cr\et pw")

    call_command("backup", "--output", str(tmp_path / "out.dump"), stdout=io.StringIO())

    argv, passfile, mode, line, pgpassword = (tmp_path / "seen").read_text().splitlines()
    assert "s3" not in argv
    assert "--format=custom" in argv
    assert mode == "600"
    assert line == f"*:*:*:{connection.settings_dict['USER']}:s3\\:cr\\\\et pw"
    assert pgpassword == "0"
    assert not Path(passfile).exists()  # removed once pg_dump is done
    assert (tmp_path / "out.dump").read_text() == "dump\n"
