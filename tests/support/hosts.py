"""Several hosts on one machine, for tests/liveness/test_multi_host.py.

* `host_network`: each host in a network namespace of its own, joined to the machine by a veth
  link (10.213.<n>.2 on the host's side, 10.213.<n>.1 on the machine's), and in a UTS namespace
  named ``host-<name>`` (what Celery's node names, TaskRun.worker and the beat's log show). Where
  that cannot be done (not root, no ``ip``) every host runs on the machine's loopback, and the
  note says why.
* `external_postgres`: a second PostgreSQL (the embedded server's binaries, pgvector included) listening on
  TCP on the machine's side of every link: the database the hosts share, as a managed server
  would be.
* `Forwarder`: TCP from the machine's side of the links to a service that listens on loopback
  only (the machine's RabbitMQ); a host's connection closed is closed upstream at once.
* `Host`: one host's roles (``manage.py serve --role web|worker|beat``) in one process group,
  which `Host.kill` stops dead all at once, as a power cut would.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import psycopg

from governance.kernel import embedded_db
from tests.support.processes import BASE_DIR, PYTHON, free_port, wait_for

NETNS_PREFIX = "gvhost-"
VETH_PREFIX = "gvh-"
SUBNET = "10.213"
PG_FOLDER_PREFIX = "gvhosts-pg-"


@dataclass(frozen=True)
class Link:
    """Where a host lives: its network namespace (None: the machine's own network), its own
    address (where its web role listens) and the machine's address it reaches shared services at."""

    name: str
    netns: str | None
    address: str
    gateway: str

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` run on this host: in its namespaces, under its host name."""
        if self.netns is None:
            return argv
        return [
            *("ip", "netns", "exec", self.netns, "unshare", "--uts", "sh", "-c"),
            *('hostname "$0" && exec "$@"', f"host-{self.name}", *argv),
        ]


@dataclass(frozen=True)
class Network:
    links: list[Link]
    note: str  # how the hosts are separated, for the test's output

    @property
    def namespaced(self) -> bool:
        return self.links[0].netns is not None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


def _remove_leftovers() -> None:
    """Namespaces and links of an earlier run that crashed before its cleanup."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout
    for line in listed.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(NETNS_PREFIX):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
    for link in psutil.net_if_addrs():
        if link.startswith(VETH_PREFIX):
            subprocess.run(["ip", "link", "del", link], capture_output=True, timeout=30)


def _namespaces_unavailable() -> str:
    if os.geteuid() != 0:
        return "not root"
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        return "no ip (iproute2) or unshare"
    return ""


@contextlib.contextmanager
def host_network(names: tuple[str, ...]) -> Iterator[Network]:
    """A namespace and a veth link per host, removed afterwards; loopback where they cannot be made."""
    reason = _namespaces_unavailable()
    links: list[Link] = []
    if not reason:
        _remove_leftovers()
        try:
            for n, name in enumerate(names, start=1):
                netns, outside, inside = f"{NETNS_PREFIX}{name}", f"{VETH_PREFIX}{name}0", f"{VETH_PREFIX}{name}1"
                gateway, address = f"{SUBNET}.{n}.1", f"{SUBNET}.{n}.2"
                _ip("netns", "add", netns)
                _ip("link", "add", outside, "type", "veth", "peer", "name", inside, "netns", netns)
                _ip("addr", "add", f"{gateway}/24", "dev", outside)
                _ip("link", "set", outside, "up")
                _ip("-n", netns, "addr", "add", f"{address}/24", "dev", inside)
                _ip("-n", netns, "link", "set", inside, "up")
                _ip("-n", netns, "link", "set", "lo", "up")
                links.append(Link(name, netns, address, gateway))
        except (subprocess.SubprocessError, OSError) as exc:
            _remove_leftovers()
            reason = f"namespaces refused: {getattr(exc, 'stderr', '') or exc}".strip()
            links = []
    if reason:
        links = [Link(name, None, "127.0.0.1", "127.0.0.1") for name in names]
        note = f"hosts share the machine's loopback ({reason}): process groups only"
    else:
        note = "each host in its own network namespace, joined by a veth link"
    try:
        yield Network(links, note)
    finally:
        if not reason:
            _remove_leftovers()


# --- The external PostgreSQL ---------------------------------------------------------------------


def _pg_bin(name: str) -> str:
    return str(embedded_db.bin_dir() / name)


def _as_postgres_user(argv: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
    if os.geteuid() == 0:
        argv = ["su", embedded_db.SYSTEM_USER, "-s", "/bin/sh", "-c", " ".join(f"'{arg}'" for arg in argv)]
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120, **options)


def _stop_postgres(pgdata: Path) -> None:
    if (pgdata / "postmaster.pid").exists():
        with contextlib.suppress(subprocess.SubprocessError):
            _as_postgres_user([_pg_bin("pg_ctl"), "-D", str(pgdata), "-m", "immediate", "-w", "stop"])


@dataclass(frozen=True)
class Postgres:
    port: int

    def url(self, address: str, database: str = "governance") -> str:
        return f"postgresql://postgres@{address}:{self.port}/{database}"


@contextlib.contextmanager
def external_postgres(addresses: list[str]) -> Iterator[Postgres]:
    """A fresh server listening on TCP at ``addresses`` (trusted: only this machine and its
    namespaces reach them), with an empty ``governance`` database; stopped and removed afterwards.
    Durability is off (fsync): the figures measure the control plane, not this machine's disk."""
    for stale in glob.glob(os.path.join(tempfile.gettempdir(), f"{PG_FOLDER_PREFIX}*")):
        _stop_postgres(Path(stale) / "pgdata")
        shutil.rmtree(stale, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix=PG_FOLDER_PREFIX))
    pgdata = folder / "pgdata"
    if os.geteuid() == 0:
        account = pwd.getpwnam(embedded_db.SYSTEM_USER)
        os.chown(folder, account.pw_uid, account.pw_gid)
    port = free_port()
    try:
        _as_postgres_user([_pg_bin("initdb"), "-D", str(pgdata), "-U", "postgres", "--auth=trust", "-E", "utf8"])
        with open(pgdata / "pg_hba.conf", "a") as hba:
            hba.write(f"host all all {SUBNET}.0.0/16 trust\n")
        options = (
            f"-h {','.join(addresses)} -p {port} -k {folder} -c max_connections=300 -c fsync=off"
            " -c synchronous_commit=off -c full_page_writes=off"
        )
        _as_postgres_user(
            [_pg_bin("pg_ctl"), "-D", str(pgdata), "-l", str(folder / "log"), "-o", options, "-w", "start"]
        )
        server = Postgres(port)
        with psycopg.connect(server.url(addresses[0], "postgres"), autocommit=True) as connection:
            connection.execute("CREATE DATABASE governance")
        yield server
    finally:
        _stop_postgres(pgdata)
        shutil.rmtree(folder, ignore_errors=True)


def query(url: str, sql: str, params: tuple | list = ()) -> list[tuple]:
    """Rows of one statement on the hosts' database (the test process has no Django connection to it)."""
    with psycopg.connect(url, autocommit=True) as connection:
        cursor = connection.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


# --- The broker forwarder ------------------------------------------------------------------------


class Forwarder:
    """Listens on each of ``addresses`` (a port each) and pipes every connection to ``target``."""

    def __init__(self, target: tuple[str, int], addresses: list[str]) -> None:
        self.target = target
        self.addresses = list(dict.fromkeys(addresses))
        self.ports: dict[str, int] = {}
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.servers: list[asyncio.base_events.Server] = []

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def _connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(self._pipe(reader, upstream_writer), self._pipe(upstream_reader, writer))

    async def _listen(self) -> None:
        for address in self.addresses:
            server = await asyncio.start_server(self._connect, address, 0)
            self.servers.append(server)
            self.ports[address] = server.sockets[0].getsockname()[1]

    async def _close(self) -> None:
        for server in self.servers:
            server.close()
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def __enter__(self) -> Forwarder:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self.loop).result(timeout=10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


# --- A host --------------------------------------------------------------------------------------


def _kind(process: psutil.Process) -> str:
    """What a process of a host is, for the sizing figures."""
    words = " ".join(process.cmdline())
    parent = process.parent()
    parent_words = " ".join(parent.cmdline()) if parent else ""
    if "gunicorn" in words:
        return "web worker (gunicorn)" if "gunicorn" in parent_words else "web master (gunicorn)"
    if "celery" in words and " beat" in words:
        return "beat"
    if "celery" in words:
        return "celery pool process" if "celery" in parent_words else "celery worker (main)"
    if "serve" in words:
        return "serve (supervisor)"
    return "other"


@dataclass
class Host:
    """One host: its roles, each a ``manage.py serve --role`` in the host's one process group."""

    link: Link
    env: dict[str, str]
    folder: Path
    port: int = field(default_factory=free_port)
    roles: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.link.name

    @property
    def base(self) -> str:
        return f"http://{self.link.address}:{self.port}"

    def log(self, role: str) -> Path:
        return self.folder / f"{role}.log"

    def start(self, role: str) -> None:
        group = next(iter(self.roles.values())).pid if self.roles else None
        argv = [PYTHON, "manage.py", "serve", "--role", role, "--host", self.link.address, "--port", str(self.port)]
        with open(self.log(role), "w") as log:
            self.roles[role] = subprocess.Popen(
                self.link.command(argv),
                cwd=BASE_DIR,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                process_group=group or 0,  # the host's own group (in this session: joining needs that)
            )

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base}/api/v1/health", timeout=3) as response:
                return response.status == 200
        except OSError:
            return False

    def leading(self) -> bool:
        return "[beat] leading" in self.log("beat").read_text()

    def processes(self) -> list[psutil.Process]:
        """The serve processes and everything they started."""
        found = []
        for serve in self.roles.values():
            with contextlib.suppress(psutil.NoSuchProcess):
                root = psutil.Process(serve.pid)
                found += [root, *root.children(recursive=True)]
        return found

    def memory(self) -> dict[str, list[float]]:
        """Resident memory (MB) of each of the host's processes, by kind."""
        sizes: dict[str, list[float]] = {}
        for process in self.processes():
            with contextlib.suppress(psutil.NoSuchProcess):
                sizes.setdefault(_kind(process), []).append(process.memory_info().rss / 2**20)
        return sizes

    def kill(self) -> float:
        """Every process of the host stopped, then SIGKILLed: none restarts another, warm-stops,
        or hands its work back; the kernel closes their connections, as a host's death would.
        Returns when (time.monotonic()) the signals went out."""
        for serve in self.roles.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(serve.pid, signal.SIGSTOP)
        everything = self.processes()
        for process in everything:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.send_signal(signal.SIGSTOP)
        for process in everything:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        psutil.wait_procs(everything, timeout=30)
        for serve in self.roles.values():
            serve.wait(timeout=30)
        return killed_at

    def stop(self) -> None:
        """What SIGTERM to each role does (serve stops its children); whatever is left is killed."""
        left = self.processes()
        for serve in self.roles.values():
            if serve.poll() is None:
                serve.send_signal(signal.SIGTERM)
        for serve in self.roles.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                serve.wait(timeout=40)
        for process in left:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        psutil.wait_procs(left, timeout=30)


def wait_ready(hosts: list[Host], timeout: float) -> bool:
    """Every host's web answers healthy and its workers are ready."""

    def ready() -> bool:
        return all(host.healthy() and host.log("worker").read_text().count(" ready.") >= 2 for host in hosts)

    return bool(wait_for(ready, timeout=timeout, interval=1))


# --- The world the hosts share -------------------------------------------------------------------


def seed_world(tick_agents: int) -> None:
    """Run by ``manage.py shell`` against the hosts' database: the agents, keys and automations the
    test drives, created through the services; prints them as JSON on the last line."""
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.utils import timezone
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    from agents.registry import load_manifest
    from governance.kernel.principals import SYSTEM
    from governance.kernel.services import issue_api_key
    from sessions.automations import create_automation
    from tests.support.manifests import manifest_text

    def agent(manifest: str, agent_id: str, text: str | None = None) -> Any:
        loaded = load_manifest(text or manifest_text(manifest, id=agent_id), actor=SYSTEM)[0].agent
        return loaded

    def key(**owner: Any) -> str:
        return issue_api_key(actor=SYSTEM, name="multi-host test", **owner)[1]

    # The architect's read tool, limited to 10 calls a minute (60 in the shipped manifest).
    limited = manifest_text("agent.seo.architect", id="agent.hosts.tools").replace("rate_limit: 60", "rate_limit: 10")
    agents = {
        "jobs": agent("agent.seo.vlevel", "agent.seo.vlevel"),
        "tools": agent("agent.seo.architect", "agent.hosts.tools", limited),
        "approver": agent("agent.seo.architect", "agent.hosts.approver"),
        "chat": agent("agent.seo.architect", "agent.hosts.chat"),
        "queue": agent("agent.seo.architect", "agent.hosts.queue"),
    }
    keys = {role: key(agent=item) for role, item in agents.items()}
    reviewers = Group.objects.get(name="Reviewer")
    for name in ("rita", "rob"):
        user = get_user_model().objects.create_user(name)
        user.groups.add(reviewers)
        keys[name] = key(user=user)
    automations = []
    tomorrow = timezone.now() + timedelta(days=1)
    for n in range(tick_agents):
        owner = agent("agent.seo.architect", f"agent.hosts.tick{n:02d}")
        automation = create_automation(
            owner,
            actor=SYSTEM,
            name=f"Nightly {n}",
            interval_minutes=60,
            messages=[{"text": "Check the pages"}],
            first_run_at=tomorrow,
        )
        automations.append(automation.pk)
    # The heartbeat every second: how many beats send shows in its runs per second.
    every_second, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.filter(name="heartbeat").update(interval=every_second)
    print(json.dumps({"keys": keys, "automations": automations}))


def run_seed(env: dict[str, str], tick_agents: int) -> dict[str, Any]:
    code = f"from tests.support.hosts import seed_world; seed_world({tick_agents})"
    done = subprocess.run(
        [PYTHON, "manage.py", "shell", "-c", code], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def drop_queues(broker_url: str, names: list[str]) -> None:
    """The test's queues and their exchanges, gone from the shared broker."""
    from kombu import Connection

    with Connection(broker_url) as connection:
        channel = connection.default_channel
        for name in names:
            with contextlib.suppress(Exception):
                channel.queue_delete(name)
            with contextlib.suppress(Exception):
                channel.exchange_delete(name)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(0.95 * len(ordered)) - 1)] if ordered else 0.0
