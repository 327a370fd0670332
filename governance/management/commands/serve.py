"""Run the whole control plane in the foreground: web server, Celery worker and Celery beat.

``make run`` calls this. It migrates, loads the demo data (demo accounts and keys only on the
first start, on an empty database), starts the three processes, prints where to go once the API
answers healthy (and where the demo credentials file is, never the secrets themselves), and on
Ctrl-C (or SIGTERM) stops all three and, when this run started it, the embedded PostgreSQL. A
process that dies on its own is started again, after a pause that doubles with each quick crash
(1 s up to a minute) and resets once it has run for a minute; only Ctrl-C or SIGTERM stops the
plane.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
import urllib.request
from types import FrameType

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from governance import demo_credentials
from governance.kernel import runtime

_PR_SET_PDEATHSIG = 1
STOP_TIMEOUT = 20
FIRST_PAUSE, LONGEST_PAUSE = 1.0, 60.0
STEADY_AFTER = 60.0  # a child that ran this long before dying starts again after the first pause


def _die_with_parent() -> None:
    """In the child: get SIGTERM if the supervisor itself is killed (Linux)."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class Command(BaseCommand):
    help = "Migrate, load demo data, then run web + Celery worker + Celery beat until Ctrl-C."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--no-demo", action="store_true", help="skip load_demo")

    def handle(self, *args: object, host: str, port: int, no_demo: bool, **options: object) -> None:
        started = time.monotonic()
        self.stopping = False
        self.children: dict[str, subprocess.Popen] = {}
        self.commands: dict[str, list[str]] = {}
        self.started_at: dict[str, float] = {}
        self.pauses: dict[str, float] = {}
        signal.signal(signal.SIGINT, self._request_stop)
        signal.signal(signal.SIGTERM, self._request_stop)
        exit_code = 0
        try:
            call_command("migrate", interactive=False, verbosity=0)
            if not no_demo:
                call_command("load_demo", stdout=self.stdout)
            self._start_children(host, port)
            base = f"http://{host}:{port}"
            if self._wait_healthy(f"{base}/api/v1/health"):
                credentials = demo_credentials.credentials_file()
                self.stdout.write(
                    self.style.SUCCESS(f"Control plane ready in {time.monotonic() - started:.1f} s")
                    + f"\n  Admin:    {base}/admin/\n  Inbox:    {base}/inbox/\n  API docs: {base}/api/v1/docs\n"
                    + f"  MCP:      {base}/mcp (Streamable HTTP, Bearer API key)\n"
                    + (f"  Demo credentials: {credentials}\n" if not no_demo and credentials.exists() else "")
                    + "Press Ctrl-C to stop."
                )
            exit_code = self._supervise()
        finally:
            self._stop_children()
            if runtime.release():
                self.stdout.write("Embedded PostgreSQL stopped.")
        if exit_code:
            sys.exit(exit_code)

    def _request_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True

    def _start_children(self, host: str, port: int) -> None:
        python = sys.executable
        web_workers = os.environ.get("WEB_CONCURRENCY", "2")
        # Threads (gunicorn's gthread worker): a live page's event stream (governance.kernel.live)
        # holds one thread for up to LIVE_STREAM_SECONDS, not a whole process.
        web_threads = os.environ.get("WEB_THREADS", "8")
        commands = {
            "web": [
                python,
                "-m",
                "gunicorn",
                "governance.wsgi",
                "--bind",
                f"{host}:{port}",
                "--workers",
                web_workers,
                "--threads",
                web_threads,
                "--access-logfile",
                "-",
                "--graceful-timeout",
                "10",
                "--no-control-socket",
            ],
            "worker": [
                python,
                "-m",
                "celery",
                "-A",
                "governance",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                os.environ.get("CELERY_CONCURRENCY", "2"),
            ],
            "beat": [python, "-m", "celery", "-A", "governance", "beat", "--loglevel", "INFO"],
        }
        self.commands = commands
        for name in commands:
            self._start(name)

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
            for name, when in list(due.items()):
                if now >= when:
                    del due[name]
                    self._start(name)
                    self.stderr.write(f"{name} started again (pid {self.children[name].pid}).")
            time.sleep(0.2)
        return 0

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
