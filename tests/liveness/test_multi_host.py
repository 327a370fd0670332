"""Two hosts share one database and one broker: every rule holds across them, and when one dies
the other takes its work over, nothing lost, nothing doubled.

Each host is a process group running `manage.py serve --role web`, `--role worker` (the
interactive and the bulk Celery workers) and `--role beat`, in a network namespace of its own
where the machine allows (tests/support/hosts.py; else on loopback, and the output says so). They
share a second PostgreSQL reached over TCP through DATABASE_URL and the machine's RabbitMQ (through
a forwarder on the machine's side of their links: RabbitMQ listens on loopback only). Embeddings
come from a slow Ollama stand-in that counts the texts it is asked for.

Under concurrent requests through both hosts: one job per idempotency key, a tool's rate limit
exactly, one active session per agent, one decision per review item; with both beats running,
one sends (the heartbeat, due every second, runs once a second), and ticks sent to both hosts'
workers start each due automation once. Then host A, which leads the beats, is killed outright
(every process SIGKILLed at once) in the middle of a batch of embeddings while a client submits
jobs through it: host B's workers get A's unacknowledged tasks back from RabbitMQ and finish
them, B's beat leads, and the client, retrying on B with the same idempotency keys, leaves one job
per key. The sizing figures (requests per second, p95, memory per process kind, takeover time)
are printed; docs/deploy.md quotes them.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest

from governance.kernel import queues
from governance.kernel.taskruns import WORKER_LOST
from tests.support.hosts import (
    Forwarder,
    Host,
    Network,
    drop_queues,
    external_postgres,
    host_network,
    p95,
    query,
    run_seed,
    wait_ready,
)
from tests.support.http_servers import SlowOllama, serving
from tests.support.processes import BASE_DIR, PYTHON, process_env, sending_to, wait_for

pytestmark = pytest.mark.process

T = TypeVar("T")
RABBITMQ = ("127.0.0.1", 5672)
MODEL, DIMENSION = "multi-host-embed", 16
EMBED_SECONDS = 0.05  # per text at the stand-in
LEARNINGS = 240
TICK_AGENTS = 8
LOAD_SECONDS, LOAD_THREADS = 6.0, 6  # per host, both hosts at once
RATE_LIMITED_TOOL = "mcp__supabase__execute_sql"  # 10 calls a minute for agent.hosts.tools
APPROVAL_TOOL = "mcp__github__create_issue"  # a write: a reviewer approves each call


def call(base: str, method: str, path: str, key: str, body: Any = None, timeout: float = 30) -> tuple[int, Any]:
    """One API request; (status, JSON body). A connection that fails is status 0."""
    request = urllib.request.Request(
        f"{base}/api/v1{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")
    except OSError:
        return 0, None


def at_once(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Every call in a thread of its own, released together."""
    barrier = threading.Barrier(len(calls))

    def run(function: Callable[[], T]) -> T:
        barrier.wait()
        return function()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def job(key: str, n: int = 0) -> dict[str, Any]:
    return {
        "intent": "seo_audit",
        "scope": {"entityType": "page"},
        "payload": {"urls": [f"https://example.com/{key}/{n}"], "depth": 1},
        "context": {"source": "manual"},
        "idempotencyKey": key,
    }


def load(host: Host, key: str, deadline: float) -> tuple[list[float], int]:
    """Job submissions, one after the other, until the deadline: latencies of the 201s, failures."""
    latencies, failures = [], 0
    while time.monotonic() < deadline:
        started = time.monotonic()
        status, _ = call(host.base, "POST", "/jobs", key, job(f"load-{uuid.uuid4().hex}"))
        if status == 201:
            latencies.append(time.monotonic() - started)
        else:
            failures += 1
    return latencies, failures


def count(db: str, sql: str, *params: Any) -> int:
    return query(db, sql, params)[0][0]


def heartbeats(db: str) -> int:
    return count(db, "SELECT count(*) FROM governance_taskrun WHERE task_name = 'governance.heartbeat'")


def leaders(db: str) -> list[str]:
    """The address each beat holding the leader's lock connects from (one, or none)."""
    rows = query(
        db, "SELECT host(client_addr) FROM pg_stat_activity WHERE application_name = 'governance beat (leader)'"
    )
    return [row[0] for row in rows]


def heartbeats_per_second(db: str, seconds: float) -> float:
    """Heartbeat runs per second over ``seconds``: due every second, so two acting beats make 2."""
    before, started = heartbeats(db), time.monotonic()
    time.sleep(seconds)
    return (heartbeats(db) - before) / (time.monotonic() - started)


@dataclass
class Plant:
    """Two hosts up, and what the test drives them with."""

    network: Network
    hosts: list[Host]
    db: str  # the shared database, as this process reaches it
    queue: str
    keys: dict[str, str]
    automations: list[int]
    embedder: SlowOllama

    def expected_leader(self, host: Host) -> str:
        return host.link.address if self.network.namespaced else "127.0.0.1"


def broker_url(address: str, port: int) -> str:
    return f"amqp://guest:guest@{address}:{port}//"


@contextmanager
def two_hosts(tmp_path: Path, timings: dict[str, float]) -> Iterator[Plant]:
    """The shared services, the database migrated once and seeded, then the roles of both hosts
    (A's beat first, so A leads); everything stopped and removed afterwards."""
    begun = time.monotonic()
    embedder = SlowOllama(seconds=EMBED_SECONDS, dimension=DIMENSION)
    queue = f"test-hosts-{uuid.uuid4().hex[:8]}"
    with ExitStack() as stack:
        network = stack.enter_context(host_network(("a", "b")))
        gateways = list(dict.fromkeys(link.gateway for link in network.links))
        postgres = stack.enter_context(external_postgres(gateways))
        forwarder = stack.enter_context(Forwarder(RABBITMQ, gateways))
        embedding = {gateway: stack.enter_context(serving(embedder.handler(), host=gateway)) for gateway in gateways}
        stack.callback(drop_queues, broker_url(*RABBITMQ), [queues.queue_name(queue, kind) for kind in queues.KINDS])
        shared = {
            "CELERY_QUEUE": queue,
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": ",".join(["127.0.0.1", "localhost", *(link.address for link in network.links)]),
            "EMBEDDING_BACKEND": "ollama",
            "EMBEDDING_MODEL": MODEL,
            "EMBEDDING_DIMENSION": str(DIMENSION),
            "BEAT_STANDBY_SECONDS": "1",
        }
        hosts = []
        for link in network.links:
            folder = tmp_path / f"host-{link.name}"
            (folder / "var").mkdir(parents=True)
            env = process_env(
                folder / "var",
                **shared,
                DATABASE_URL=postgres.url(link.gateway),
                CELERY_BROKER_URL=broker_url(link.gateway, forwarder.ports[link.gateway]),
                EMBEDDING_URL=embedding[link.gateway],
            )
            hosts.append(Host(link, env, folder))
            stack.callback(hosts[-1].stop)
        a, b = hosts

        migrated = subprocess.run(
            [PYTHON, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=BASE_DIR,
            env=a.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert migrated.returncode == 0, migrated.stderr[-3000:]
        world = run_seed(a.env, TICK_AGENTS)
        timings["setup (PostgreSQL, migrate, seed)"] = time.monotonic() - begun
        prepared = time.monotonic()
        for host in hosts:
            host.start("web")
            host.start("worker")
        a.start("beat")
        assert wait_for(a.leading, timeout=120), a.log("beat").read_text()[-3000:]
        b.start("beat")
        logs = [host.log(role) for host in hosts for role in host.roles]
        assert wait_ready(hosts, timeout=180), [log.read_text()[-2000:] for log in logs]
        assert wait_for(lambda: "[beat] standing by" in b.log("beat").read_text(), timeout=60)
        timings["roles up"] = time.monotonic() - prepared
        yield Plant(network, hosts, postgres.url(gateways[0]), queue, world["keys"], world["automations"], embedder)


def one_job_per_key(plant: Plant) -> None:
    """The same idempotency key sent through both hosts at once."""
    send = partial(call, method="POST", path="/jobs", key=plant.keys["jobs"], body=job("same-key"))
    replies = at_once([partial(send, host.base) for host in plant.hosts * 12])
    assert Counter(status for status, _ in replies) == {201: 1, 200: 23}, replies
    assert len({body["jobId"] for _, body in replies}) == 1
    assert count(plant.db, "SELECT count(*) FROM agents_job WHERE idempotency_key = 'same-key'") == 1


def rate_limit_across_hosts(plant: Plant) -> None:
    """10 calls a minute for the agent, not 10 per host."""
    path = f"/agents/agent.hosts.tools/tools/{RATE_LIMITED_TOOL}/calls"
    replies = at_once([partial(call, host.base, "POST", path, plant.keys["tools"], {}) for host in plant.hosts * 15])
    assert Counter(status for status, _ in replies) == {201: 10, 429: 20}, replies
    calls = "SELECT count(*) FROM agents_toolcall t JOIN agents_agent g ON g.id = t.agent_id WHERE g.agent_id = %s"
    assert count(plant.db, calls, "agent.hosts.tools") == 10


def one_active_session_per_agent(plant: Plant) -> None:
    """AUTOMATION runs queue behind the active one (whichever host's worker fills the slot), and
    each CHAT pre-empts the one before."""
    kinds = {"queue": "AUTOMATION", "chat": "CHAT"}
    starts = [
        partial(call, host.base, "POST", "/sessions", plant.keys[who], {"type": kind, "name": f"{who} {n}"})
        for who, kind in kinds.items()
        for n, host in enumerate(plant.hosts * 8)
    ]
    assert {status for status, _ in at_once(starts)} == {201}
    sessions = (
        "SELECT count(*) FILTER (WHERE s.is_active), count(*) FROM ai_sessions_aisession s"
        " JOIN agents_agent g ON g.id = s.agent_id WHERE g.agent_id = %s"
    )

    def one_active_each() -> list[tuple]:
        return [query(plant.db, sessions, [f"agent.hosts.{who}"])[0] for who in kinds]

    assert wait_for(lambda: one_active_each() == [(1, 16), (1, 16)], timeout=30), one_active_each()
    time.sleep(2)  # the queued runs' slot-filling tasks have run on both hosts' workers meanwhile
    assert one_active_each() == [(1, 16), (1, 16)]


def one_decision_per_item(plant: Plant) -> None:
    """Two reviewers press approve and reject through both hosts at once."""
    path = f"/agents/agent.hosts.approver/tools/{APPROVAL_TOOL}/calls"
    status, pending = call(plant.hosts[0].base, "POST", path, plant.keys["approver"], {})
    assert status == 202, pending
    item = pending["reviewItemId"]
    decide = [
        partial(call, host.base, "POST", f"/reviews/{item}/decision", plant.keys[reviewer], {"decision": decision})
        for host in plant.hosts
        for reviewer, decision in (("rita", "approve"), ("rob", "reject"))
        for _ in range(4)
    ]
    replies = at_once(decide)
    assert Counter(status for status, _ in replies) == {200: 1, 409: 15}, replies
    decided = next(body for status, body in replies if status == 200)
    recorded = query(plant.db, "SELECT decision FROM governance_reviewdecision WHERE item_id = %s", [item])
    assert recorded == [(decided["decision"],)]


def each_due_automation_starts_once(plant: Plant) -> dict[str, int]:
    """Ticks sent at once to both hosts' workers; returns the ticks each worker ran."""
    due = "UPDATE ai_sessions_automation SET next_run_at = now() - interval '1 second' WHERE id = ANY(%s)"
    query(plant.db, due, [plant.automations])
    with sending_to(plant.queue, broker_url(*RABBITMQ)):
        from controlplane.celery import app

        for _ in range(12):
            app.send_task("sessions.tick")
    runs = (
        "SELECT automation_id, count(*) FROM ai_sessions_aisession WHERE automation_id = ANY(%s)"
        " AND trigger = 'SCHEDULED' GROUP BY automation_id"
    )
    ticks = (
        "SELECT worker, count(*) FROM governance_taskrun WHERE task_name = 'sessions.tick'"
        " AND finished_at IS NOT NULL GROUP BY worker"
    )

    def all_ran() -> bool:
        return (
            sum(dict(query(plant.db, ticks)).values()) >= 12
            and len(query(plant.db, runs, [plant.automations])) == TICK_AGENTS
        )

    assert wait_for(all_ran, timeout=90), tick_report(plant)
    assert {n for _, n in query(plant.db, runs, [plant.automations])} == {1}
    two_active = "SELECT agent_id FROM ai_sessions_aisession WHERE is_active GROUP BY agent_id HAVING count(*) > 1"
    assert query(plant.db, two_active) == []
    return dict(query(plant.db, ticks))


def tick_report(plant: Plant) -> dict[str, list[tuple]]:
    """What a failed tick step shows: each tick run (worker, status, result or error), and the
    sessions and next run times of the tick agents' automations."""
    return {
        "ticks": query(
            plant.db,
            "SELECT worker, status, started_at, finished_at, result, left(error, 500) FROM governance_taskrun"
            " WHERE task_name = 'sessions.tick' ORDER BY started_at",
        ),
        "automations": query(
            plant.db,
            "SELECT a.id, a.agent_id, a.enabled, a.next_run_at, now(),"
            " (SELECT array_agg(s.phase || ':' || s.is_active || ':' || s.trigger) FROM ai_sessions_aisession s"
            "  WHERE s.agent_id = a.agent_id)"
            " FROM ai_sessions_automation a WHERE a.id = ANY(%s) ORDER BY a.id",
            [plant.automations],
        ),
    }


def sizing(plant: Plant) -> list[str]:
    """Job submissions through both hosts at once, then each process's memory."""
    deadline = time.monotonic() + LOAD_SECONDS
    with ThreadPoolExecutor(2 * LOAD_THREADS) as pool:
        loads = {
            host.name: [pool.submit(load, host, plant.keys["jobs"], deadline) for _ in range(LOAD_THREADS)]
            for host in plant.hosts
        }
        results = {name: [future.result() for future in futures] for name, futures in loads.items()}
    figures = []
    for name, done in results.items():
        latencies = [value for values, _ in done for value in values]
        assert sum(failures for _, failures in done) == 0
        figures.append(
            f"host {name}: POST /api/v1/jobs {len(latencies) / LOAD_SECONDS:.0f} req/s with {LOAD_THREADS} clients"
            f" (both hosts loaded at once), p95 {p95(latencies) * 1000:.0f} ms"
        )
    connections = query(
        plant.db,
        "SELECT coalesce(host(client_addr), 'socket'), count(*) FROM pg_stat_activity"
        " WHERE datname = 'governance' GROUP BY 1 ORDER BY 1",
    )
    figures.append(f"database connections by address after the load: {dict(connections)}")
    memory: dict[str, list[float]] = {}
    for host in plant.hosts:
        for kind, sizes in host.memory().items():
            memory.setdefault(kind, []).extend(sizes)
    per_kind = (f"{kind} {max(sizes):.0f} MB (x{len(sizes) // 2})" for kind, sizes in sorted(memory.items()))
    figures.append("RSS per process (largest; how many per host): " + "; ".join(per_kind))
    return figures


def post_learnings(plant: Plant) -> dict[int, str]:
    """LEARNINGS learnings through both hosts: a memory.embed task each, queued; returns their texts."""
    texts: dict[int, str] = {}

    def learn(n: int) -> int:
        text = f"host learning {n}: cache the sitemap before the crawl"
        body = {"story": f"HX-{n % 20}", "gate": 1 + n % 3, "domain": "seo", "project": "shop", "tags": ["t"]}
        status, created = call(
            plant.hosts[n % 2].base, "POST", "/memory/learnings", plant.keys["jobs"], {**body, "text": text}
        )
        if status == 201:
            texts[created["id"]] = text
        return status

    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(learn, range(LEARNINGS))) == {201}
    return texts


def test_two_hosts_hold_every_rule_and_one_takes_the_work_of_the_other_when_it_dies(tmp_path, capsys):
    begun = time.monotonic()
    timings: dict[str, float] = {}
    with two_hosts(tmp_path, timings) as plant:
        a, b = plant.hosts
        db = plant.db
        one_job_per_key(plant)
        rate_limit_across_hosts(plant)
        one_active_session_per_agent(plant)
        one_decision_per_item(plant)

        # One beat acts, A's: the heartbeat runs once a second, not twice.
        assert leaders(db) == [plant.expected_leader(a)]
        assert not b.leading()
        rate_before = heartbeats_per_second(db, 8)
        assert 0.6 <= rate_before <= 1.4, rate_before
        tick_workers = each_due_automation_starts_once(plant)
        if plant.network.namespaced:
            assert set(tick_workers) == {"host-a", "host-b"}, tick_workers
        figures = sizing(plant)

        # Host A dies in the middle of a batch of embeddings, while a client submits jobs through it.
        plant.embedder.answering.clear()  # the batch waits at the model until the client runs
        texts = post_learnings(plant)
        submitted: list[tuple[str, str]] = []  # (key, host) of each answered submission
        stop = threading.Event()

        def client() -> None:
            """Submits through A; what A does not answer goes again to B, with the same key."""
            n = 0
            while not stop.is_set():
                for host in (a, b):
                    if call(host.base, "POST", "/jobs", plant.keys["jobs"], job(f"kill-{n}", n), timeout=10)[0]:
                        submitted.append((f"kill-{n}", host.name))
                        break
                n += 1
                time.sleep(0.1)

        vectors = "SELECT object_id, text_sha256 FROM memory_embedding WHERE kind = 'learning' AND model = %s"
        embedding_on_a = (
            "SELECT count(*) FROM governance_taskrun WHERE task_name = 'memory.embed' AND finished_at IS NULL"
            " AND worker = 'host-a'"
        )

        def mid_batch() -> bool:
            under_way = LEARNINGS // 5 <= len(query(db, vectors, [MODEL])) < LEARNINGS // 2
            return under_way and (not plant.network.namespaced or count(db, embedding_on_a) > 0)

        submitting = threading.Thread(target=client)
        submitting.start()
        assert wait_for(lambda: len(submitted) >= 5, timeout=30)
        plant.embedder.answering.set()
        in_time = wait_for(mid_batch, timeout=60, interval=0.05)
        killed_at = a.kill()
        assert in_time, len(query(db, vectors, [MODEL]))
        stored_then = {pk for pk, _ in query(db, vectors, [MODEL])}
        calls_then = plant.embedder.snapshot()

        assert wait_for(b.leading, timeout=60), b.log("beat").read_text()[-3000:]
        takeover = time.monotonic() - killed_at
        assert wait_for(lambda: len(query(db, vectors, [MODEL])) >= LEARNINGS, timeout=120)
        finished = time.monotonic() - killed_at
        stop.set()
        submitting.join(timeout=60)
        assert b.healthy()
        assert leaders(db) == [plant.expected_leader(b)]
        rate_after = heartbeats_per_second(db, 5)

        current = query(db, vectors, [MODEL])
        calls = plant.embedder.snapshot()
        keys = "SELECT idempotency_key, count(*) FROM agents_job WHERE idempotency_key LIKE %s GROUP BY 1"
        jobs_per_key = dict(query(db, keys, ["kill-%"]))
        cut_short = "SELECT worker FROM governance_taskrun WHERE task_name = 'memory.embed' AND error = %s"
        redelivered = Counter(worker for (worker,) in query(db, cut_short, [WORKER_LOST]))

    vectors_per_learning = Counter(pk for pk, _ in current)
    digests = dict(current)
    lost = {
        "embeddings": sum(digests.get(pk) != hashlib.sha256(text.encode()).hexdigest() for pk, text in texts.items()),
        "jobs": sum(key not in jobs_per_key for key, _ in submitted),
    }
    doubled = {
        "vectors": sum(n - 1 for n in vectors_per_learning.values()),
        "texts embedded again once stored": sum(calls[texts[pk]] > calls_then[texts[pk]] for pk in stored_then),
        "jobs": sum(n - 1 for n in jobs_per_key.values()),
    }
    through = Counter(host for _, host in submitted)
    figures += [
        f"B's beat led {takeover:.1f} s after A died (BEAT_STANDBY_SECONDS=1); heartbeats a second: "
        f"{rate_before:.2f} with two beats, {rate_after:.2f} after the takeover",
        f"{LEARNINGS} embeddings ({EMBED_SECONDS * 1000:.0f} ms each at the model): {len(stored_then)} stored when A "
        f"died, B finished the rest {finished:.1f} s after; runs cut short and delivered again: {dict(redelivered)}",
        f"the client's {len(submitted)} jobs: {through['a']} answered by A, {through['b']} by B (A's unanswered"
        " ones sent again to B with the same key)",
        f"lost {lost}, doubled {doubled}; ticks run per host {tick_workers}",
        ", ".join(f"{name} {seconds:.0f} s" for name, seconds in timings.items())
        + f", whole test {time.monotonic() - begun:.0f} s",
    ]
    with capsys.disabled():
        print(f"\n[hosts] {plant.network.note}\n" + "\n".join(f"[hosts] {line}" for line in figures))
    assert sum(lost.values()) == 0, lost
    assert sum(doubled.values()) == 0, doubled
    assert through["b"] > 0  # the client did move over
    assert 0.6 <= rate_after <= 1.4, rate_after
