"""The embedded PostgreSQL: started once, reused, survives a crashed earlier run, stops cleanly."""

from __future__ import annotations

import os
import signal

import psutil
import psycopg
import pytest

from governance.kernel import embedded_db

pytestmark = pytest.mark.process


@pytest.fixture
def pgdata(tmp_path):
    path = tmp_path / "pgdata"
    yield path
    embedded_db.stop(path)


def _query(server: embedded_db.EmbeddedServer, sql: str):
    with psycopg.connect(server.uri("postgres"), autocommit=True) as conn:
        cursor = conn.execute(sql)
        return cursor.fetchone() if cursor.description else None


def _alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie nobody has reaped yet."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_first_use_creates_the_cluster_and_pgvector_works(pgdata):
    server = embedded_db.ensure_running(pgdata)

    assert embedded_db.started_here(pgdata)
    _query(server, "CREATE EXTENSION IF NOT EXISTS vector")
    assert _query(server, "SELECT '[1,2,3]'::vector <-> '[1,2,4]'::vector") == (1.0,)


def test_a_second_caller_reuses_the_running_server(pgdata):
    first = embedded_db.ensure_running(pgdata)
    second = embedded_db.ensure_running(pgdata)

    assert second.pid == first.pid
    assert _alive(first.pid)


def test_the_database_is_created_on_first_use_only(pgdata):
    server = embedded_db.ensure_running(pgdata)
    embedded_db.ensure_database(server, "control")
    embedded_db.ensure_database(server, "control")

    assert _query(server, "SELECT count(*) FROM pg_database WHERE datname = 'control'") == (1,)


def test_a_crashed_server_does_not_block_the_next_start(pgdata):
    crashed = embedded_db.ensure_running(pgdata)
    postmaster = psutil.Process(crashed.pid)
    children = postmaster.children()
    os.kill(crashed.pid, signal.SIGKILL)
    psutil.wait_procs([postmaster, *children], timeout=30)
    assert (pgdata / "postmaster.pid").exists(), "a crash leaves its pid file behind"

    restarted = embedded_db.ensure_running(pgdata)

    assert restarted.pid != crashed.pid
    assert _query(restarted, "SELECT 1") == (1,)


def test_a_pid_file_naming_a_reused_pid_does_not_block_the_start(pgdata):
    server = embedded_db.ensure_running(pgdata)
    embedded_db.stop(pgdata)
    lines = [str(os.getpid()), str(pgdata), "0", str(server.port), str(server.socket_dir), "", "0 0", "ready"]
    (pgdata / "postmaster.pid").write_text("\n".join(lines) + "\n")

    restarted = embedded_db.ensure_running(pgdata)

    assert restarted.pid != os.getpid()
    assert _query(restarted, "SELECT 1") == (1,)


def test_stop_stops_it(pgdata):
    server = embedded_db.ensure_running(pgdata)

    assert embedded_db.stop(pgdata) is True

    assert not _alive(server.pid)
    assert not embedded_db.started_here(pgdata)
    assert embedded_db.stop(pgdata) is False


def test_a_new_cluster_serves_with_the_shared_buffers_it_was_given(pgdata):
    server = embedded_db.ensure_running(pgdata, shared_buffers="160MB")

    assert _query(server, "SHOW shared_buffers") == ("160MB",)
    _query(server, "CREATE EXTENSION IF NOT EXISTS vector")  # and it is the same working cluster


def test_a_new_size_applies_at_the_next_start_not_to_a_running_server(pgdata):
    first = embedded_db.ensure_running(pgdata, shared_buffers="160MB")
    again = embedded_db.ensure_running(pgdata, shared_buffers="192MB")
    assert again.pid == first.pid  # others are using it: it is not restarted behind their back
    assert _query(again, "SHOW shared_buffers") == ("160MB",)
    embedded_db.stop(pgdata)

    restarted = embedded_db.ensure_running(pgdata, shared_buffers="192MB")

    assert _query(restarted, "SHOW shared_buffers") == ("192MB",)
    conf = (pgdata / "postgresql.conf").read_text().splitlines()
    assert conf.count(f"include_if_exists = '{embedded_db.SETTINGS_FILE}'") == 1


def test_an_operators_alter_system_outranks_the_managed_size(pgdata):
    server = embedded_db.ensure_running(pgdata, shared_buffers="160MB")
    _query(server, "ALTER SYSTEM SET shared_buffers = '144MB'")
    embedded_db.stop(pgdata)

    restarted = embedded_db.ensure_running(pgdata, shared_buffers="160MB")

    assert _query(restarted, "SHOW shared_buffers") == ("144MB",)


@pytest.mark.parametrize(
    ("memory", "size"),
    [(24 * 2**30, "6144MB"), (2 * 2**30, "512MB"), (256 * 2**20, "128MB"), (64 * 2**30, "8192MB")],
)
def test_the_default_size_is_a_quarter_of_memory_within_postgresqls_default_and_8gb(memory, size):
    assert embedded_db.default_shared_buffers(memory) == size


def test_a_containers_memory_limit_bounds_the_default_and_no_limit_means_the_machines(tmp_path):
    machine = psutil.virtual_memory().total
    v2, v1 = tmp_path / "memory.max", tmp_path / "memory.limit_in_bytes"
    v2.write_text(f"{2 * 2**30}\n")
    assert embedded_db._memory_limit((v2, v1)) == min(machine, 2 * 2**30)
    v2.write_text("max\n")  # cgroup v2 without a limit: v1's file, when there is one, is next
    v1.write_text(f"{machine * 4}\n")  # v1 without a limit is a huge number
    assert embedded_db._memory_limit((v2, v1)) == machine
    assert embedded_db._memory_limit((tmp_path / "absent",)) == machine


def test_the_server_is_postgresql_16_14_with_pgvector_0_8_5(pgdata):
    server = embedded_db.ensure_running(pgdata)

    assert _query(server, "SHOW server_version") == ("16.14",)
    assert (pgdata / "PG_VERSION").read_text().strip() == "16"
    assert _query(server, "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'") == ("0.8.5",)


def test_a_data_directory_of_another_major_version_is_refused_and_left_alone(pgdata):
    """PostgreSQL 18's binaries ship in the same package: a cluster they made needs our 16 to say
    so, not to start on it (PostgreSQL would refuse the files, after pgserver had touched them)."""
    pgdata.mkdir()
    (pgdata / "PG_VERSION").write_text("18\n")

    with pytest.raises(RuntimeError, match=r"PostgreSQL 18 .*PostgreSQL 16"):
        embedded_db.ensure_running(pgdata, shared_buffers="160MB")

    assert sorted(path.name for path in pgdata.iterdir()) == ["PG_VERSION"]
