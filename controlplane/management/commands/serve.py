"""Run the control plane in the foreground: all of it (``make run``), or one role of a host.

``--role all`` (the default, what ``make run`` calls) migrates, adds the shipped contracts the
catalog lacks (with or without the demo: see ``_add_missing_contracts``), loads the demo data (demo
accounts and keys only on the first start, on an empty database; ``--no-demo`` skips it), starts the web
server, the Celery workers and Celery beat, says which broker it found, prints where to go once
the API answers healthy (on the first start also the demo accounts and keys just made, since the
workers' output has buried load_demo's; on later starts only where the credentials file is), and
on Ctrl-C (or SIGTERM) stops them all and, when this run started it, the embedded PostgreSQL.

On several hosts each runs only its part: ``--role web`` (gunicorn), ``--role worker`` (the
Celery workers; ``--queues tick,providers`` for only those queues, governance/kernel/queues.py),
``--role beat``. These roles never migrate nor load the demo: migrate once (``manage.py migrate``)
before starting them, and they refuse to start on a database with migrations not applied. Two
beats may run; one acts (governance/kernel/beat.py).

A process that dies on its own is started again, after a pause that doubles with each quick crash
(1 s up to a minute) and resets once it has run for a minute; only Ctrl-C or SIGTERM stops. The
embedded PostgreSQL (no DATABASE_URL) is watched the same way: a killed postmaster is started
again on the same data directory and socket, so the children reconnect on their own; meanwhile
the doors answer 503 (governance/kernel/views.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import logging
import os
import signal
import subprocess
import sys
import time
import urllib.request
from types import FrameType
from typing import TextIO, cast

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from kombu.utils.url import maybe_sanitize_url

from controlplane import demo_credentials
from governance.contracts import services as contracts
from governance.kernel import embedded_db, metrics, queues, runtime
from governance.kernel.principals import SYSTEM

_PR_SET_PDEATHSIG = 1
STOP_TIMEOUT = 20
FIRST_PAUSE, LONGEST_PAUSE = 1.0, 60.0
STEADY_AFTER = 60.0  # a child that ran this long before dying starts again after the first pause
DATABASE = "embedded PostgreSQL"


def _die_with_parent() -> None:
    """In the child: get SIGTERM if the supervisor itself is killed (Linux)."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


ROLES = ("all", "web", "worker", "beat")


def role_commands(role: str, *, host: str, port: int, queue_kinds: str = "") -> dict[str, list[str]]:
    """The processes a role runs, by name: ``web`` (gunicorn); ``worker`` (the latency-sensitive
    queues) and ``bulk worker`` (embeddings and maintenance, which may hold a small host's cores
    for minutes), or one ``worker`` on the queues named; ``beat``."""
    python = sys.executable
    prefix = settings.CELERY_TASK_DEFAULT_QUEUE
    # Celery's start banners are printed, not logged: in JSON they would be lines no parser reads
    # (serve itself says the broker and the queue).
    quiet = ("--quiet",) if settings.LOG_FORMAT == "json" else ()
    commands: dict[str, list[str]] = {}
    if role in ("all", "web"):
        # Threads (gunicorn's gthread worker): a live page's event stream (governance.kernel.live)
        # holds one thread for up to LIVE_STREAM_SECONDS, not a whole process.
        commands["web"] = [
            *(python, "-m", "gunicorn", "controlplane.wsgi", "--bind", f"{host}:{port}"),
            *("--workers", os.environ.get("WEB_CONCURRENCY", "2"), "--threads", os.environ.get("WEB_THREADS", "8")),
            *("--access-logfile", "-", "--graceful-timeout", "10", "--no-control-socket"),
            *("--config", "python:controlplane.gunicorn_conf"),
        ]
    if role in ("all", "worker"):
        concurrency = int(os.environ.get("CELERY_CONCURRENCY", "2"))
        groups = (
            {"worker": (queues.parse_kinds(queue_kinds), concurrency)}
            if queue_kinds
            else {
                "worker": (queues.INTERACTIVE, concurrency),
                "bulk worker": (queues.BULK, settings.CELERY_BULK_CONCURRENCY),
            }
        )
        for name, (kinds, processes) in groups.items():
            taken = ",".join(queues.queue_name(prefix, kind) for kind in kinds)
            # A node name unique on the machine (this supervisor's pid): RabbitMQ gives each node an
            # exclusive control queue, so a second worker role on a host (or a host sharing its
            # name) under the same node name would crash at every start.
            node = f"{name.split()[0]}.{os.getpid()}@%h"
            commands[name] = [
                *(python, "-m", "celery", "-A", "controlplane", *quiet, "worker", "--loglevel", "INFO"),
                *("--queues", taken, "--concurrency", str(processes), "--hostname", node),
            ]
    if role in ("all", "beat"):
        commands["beat"] = [python, "-m", "celery", "-A", "controlplane", *quiet, "beat", "--loglevel", "INFO"]
    return commands


class _LogLines(io.TextIOBase):
    """What serve writes for the operator, as log records, one a line (LOG_FORMAT=json): its
    banner and notices then parse like every other line of the host's log."""

    def __init__(self, level: int) -> None:
        self.level = level
        self.logger = logging.getLogger("governance.serve")

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line.strip():
                self.logger.log(self.level, line.strip())
        return len(text)


def broker_description() -> str:
    """Which broker this start uses, and why: the newcomer's local Redis is picked without a word
    in the settings, so the start says so (a password in CELERY_BROKER_URL is masked)."""
    url = settings.CELERY_BROKER_URL
    if os.environ.get("CELERY_BROKER_URL"):
        return f"{maybe_sanitize_url(url)} (CELERY_BROKER_URL)"
    if url.startswith("filesystem://"):
        return f"filesystem queue in {settings.CELERY_DIR} (no Redis answered at 127.0.0.1:6379; one host only)"
    return "Redis at 127.0.0.1:6379 (found running)"


def _require_migrated() -> None:
    """A role never migrates (hosts starting at once would race): it refuses a database that is
    behind the code instead."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if pending:
        raise CommandError(
            f"{len(pending)} migration(s) not applied (the first: {pending[0][0]}): run `manage.py migrate` "
            "once, then start the roles."
        )


class Command(BaseCommand):
    help = "Run the control plane (--role all: migrate, demo, web + workers + beat) or one role, until Ctrl-C."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--role", choices=ROLES, default=os.environ.get("SERVE_ROLE", "all"))
        parser.add_argument(
            "--queues",
            default="",
            help="worker role: the queues to take, among "
            + ", ".join(queues.KINDS)
            + " (default: all of them, in two workers: interactive and bulk)",
        )
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--no-demo", action="store_true", help="skip load_demo (role all)")

    def handle(
        self, *args: object, role: str, queues: str, host: str, port: int, no_demo: bool, **options: object
    ) -> None:
        started = time.monotonic()
        if settings.LOG_FORMAT == "json":
            self.stdout = OutputWrapper(cast(TextIO, _LogLines(logging.INFO)))
            self.stderr = OutputWrapper(cast(TextIO, _LogLines(logging.WARNING)))
        self.stopping = False
        self.children: dict[str, subprocess.Popen] = {}
        self.started_at: dict[str, float] = {}
        self.pauses: dict[str, float] = {}
        self.pgdata = None if settings.DATABASE_URL else settings.EMBEDDED_PGDATA
        if self.pgdata is not None:
            self.started_at[DATABASE] = started
        try:
            self.commands = role_commands(role, host=host, port=port, queue_kinds=queues)
        except ValueError as exc:
            raise CommandError(f"--queues: {exc}") from None
        signal.signal(signal.SIGINT, self._request_stop)
        signal.signal(signal.SIGTERM, self._request_stop)
        exit_code = 0
        try:
            first_start = False
            if role == "all":
                # This process supervises every process of the host: last run's metric files go.
                metrics.reset_multiprocess_dir()
                call_command("migrate", interactive=False, verbosity=0)
                self._add_missing_contracts()
                if not no_demo:
                    first_start = demo_credentials.is_empty_install()
                    call_command("load_demo", stdout=self.stdout)
            else:
                _require_migrated()
            self.stdout.write(f"Broker: {broker_description()}; queue {settings.CELERY_TASK_DEFAULT_QUEUE}")
            base = f"http://{host}:{port}"
            if "web" in self.commands:
                # Notification links point where this web server answers unless NOTIFY_BASE_URL says.
                os.environ.setdefault("NOTIFY_BASE_URL", base)
            for name in self.commands:
                self._start(name)
            if "web" not in self.commands and settings.METRICS_PORT:
                metrics.serve_process_figures(host, settings.METRICS_PORT)
                self.stdout.write(f"Metrics of this host's processes: http://{host}:{settings.METRICS_PORT}/metrics")
            if "web" not in self.commands:
                self.stdout.write(self.style.SUCCESS(f"Role {role} running: {', '.join(self.commands)}"))
            elif self._wait_healthy(f"{base}/api/v1/health"):
                self.stdout.write(
                    self.style.SUCCESS(f"Control plane ready in {time.monotonic() - started:.1f} s")
                    + f"\n  Admin:    {base}/admin/\n  Inbox:    {base}/inbox/\n  API docs: {base}/api/v1/docs\n"
                    + f"  MCP:      {base}/mcp (Streamable HTTP: OAuth sign-in, or an API key; keys only at /mcp/key)\n"
                    + self._credentials_lines(shown=role == "all" and not no_demo, first_start=first_start)
                    + "Press Ctrl-C to stop."
                )
            exit_code = self._supervise()
        finally:
            self._stop_children()
            if runtime.release():
                self.stdout.write("Embedded PostgreSQL stopped.")
        if exit_code:
            sys.exit(exit_code)

    def _add_missing_contracts(self) -> None:
        """The shipped contract catalog, on every start of ``--role all``, demo or not: a plane
        without it audits no LLM output. The rest a plane needs comes with ``migrate``: the
        Viewer/Reviewer/Admin groups and the shipped skills after every migrate (post_migrate,
        governance/kernel/roles.py, agents/skills.py), the periodic tasks from each app's data
        migrations.

        Here rather than in a migration or a post_migrate step: the catalog is a document operators
        version and edit (each edit a new version, with its audit row, through the contracts
        service, which historical models cannot run), not schema; and a post_migrate step runs
        after every test database flush too, importing 70 contracts under every test that never
        asked for them. Only contracts the catalog has no version of are added, so an operator's
        edit is never replaced, a contract a new release ships arrives at the next start, and
        every later start writes nothing. Hosts that run roles add them once with ``manage.py
        import_contracts --missing`` after ``migrate``."""
        report = contracts.add_missing(contracts.CATALOG.read_text(encoding="utf-8"), actor=SYSTEM)
        self.stdout.write(f"Contract catalog: {report.total} shipped contract(s), {len(report.created)} added")

    @staticmethod
    def _credentials_lines(*, shown: bool, first_start: bool) -> str:
        """On the first start, the demo credentials again (the worker's output has buried those
        load_demo printed); on later ones only where they are, as load_demo says then."""
        credentials = demo_credentials.credentials_file()
        if not shown or not credentials.exists():
            return ""
        saved = "".join(f"  {line}\n" for line in demo_credentials.saved_lines()) if first_start else ""
        return f"{saved}  Demo credentials: {credentials}\n"

    def _request_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True

    def _start(self, name: str) -> None:
        # Own session: a terminal Ctrl-C reaches only us, and we stop the children in order.
        self.children[name] = subprocess.Popen(
            self.commands[name], cwd=settings.BASE_DIR, start_new_session=True, preexec_fn=_die_with_parent
        )
        self.started_at[name] = time.monotonic()

    def _wait_healthy(self, url: str, timeout: float = 90) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.stopping and self._all_alive():
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    if response.status == 200:
                        return True
            except OSError:
                pass
            time.sleep(0.5)
        return False

    def _all_alive(self) -> bool:
        return all(child.poll() is None for child in self.children.values())

    def _supervise(self) -> int:
        """Until Ctrl-C or SIGTERM: start again whatever died, pausing longer after each quick crash."""
        due: dict[str, float] = {}
        while not self.stopping:
            now = time.monotonic()
            for name, child in self.children.items():
                if child.poll() is not None and name not in due:
                    pause = self._pause_after_exit(name, now)
                    self.stderr.write(f"{name} exited with code {child.returncode}; starting it again in {pause:g} s.")
                    due[name] = now + pause
            if self.pgdata is not None and DATABASE not in due and not embedded_db.is_running(self.pgdata):
                pause = self._pause_after_exit(DATABASE, now)
                self.stderr.write(f"{DATABASE} is not running; starting it again in {pause:g} s.")
                due[DATABASE] = now + pause
            for name, when in list(due.items()):
                if now >= when:
                    del due[name]
                    if name == DATABASE:
                        self._start_database()
                    else:
                        self._start(name)
                        self.stderr.write(f"{name} started again (pid {self.children[name].pid}).")
            time.sleep(0.2)
        return 0

    def _start_database(self) -> None:
        """Start the embedded server again; a failed start (its old backends still hold the shared
        memory, say) is seen as down at the next look and tried after a longer pause."""
        self.started_at[DATABASE] = time.monotonic()
        try:
            runtime.start_embedded()
        except Exception as exc:
            self.stderr.write(f"{DATABASE} did not start: {exc}")
        else:
            self.stderr.write(f"{DATABASE} started again.")

    def _pause_after_exit(self, name: str, now: float) -> float:
        ran = now - self.started_at[name]
        previous = self.pauses.get(name)
        pause = FIRST_PAUSE if previous is None or ran >= STEADY_AFTER else min(previous * 2, LONGEST_PAUSE)
        self.pauses[name] = pause
        return pause

    def _stop_children(self) -> None:
        for child in self.children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for name, child in self.children.items():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.stderr.write(f"{name} did not stop in {STOP_TIMEOUT} s; killing it.")
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
