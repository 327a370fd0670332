"""A scrape of GET /metrics on a database of the size the metrics issue names: 10 million contract
checks, a million jobs, a million sessions, the daily contract aggregates of a year, 100 000
learnings (a tenth without a vector) and a busy inbox.

Database ``governance_bench_metrics`` on the embedded PostgreSQL (its own: the tables are filled
once, and a marker table remembers the sizes, so a later run measures at once; ``--reload``
loads again). One row of each kind is made through the services or the ORM, then cloned set-wise
by SQL. The scrape is ``governance.kernel.metrics.view`` called as a loopback request, ``--scrapes``
times after one unrecorded scrape; each of its statements is then run again under
``EXPLAIN ANALYZE`` to show which index answers it.

Run: ``python -m bench metrics`` (``--checks 10000000 --jobs 1000000 --sessions 1000000``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.common import machine, package_version, percentile, prepare_database, publish

DB_NAME = "governance_bench_metrics"
MARKER = "bench_metrics_dataset"
TARGET_MS = 1000.0
CONTRACT_DAYS = 365
STAT_AGENTS = 50  # agents with checks of every contract every day: the aggregates' worst case for a year


@dataclass(frozen=True)
class Size:
    checks: int
    jobs: int
    sessions: int
    learnings: int
    reviews: int


def require_bench_database(name: str) -> None:
    if name != DB_NAME:
        raise SystemExit(f"refusing to fill {name!r}: this benchmark fills its tables (run it without DATABASE_URL)")


def _clone(cursor: Any, model: Any, template_pk: Any, count: int, overrides: dict[str, str], params: dict) -> None:
    """``count`` copies of one row, columns named in ``overrides`` computed from ``g`` (1..count)."""
    table = model._meta.db_table
    pk = model._meta.pk.column
    columns = [
        field.column for field in model._meta.concrete_fields if field.column in overrides or not field.primary_key
    ]
    values = [overrides.get(column, f't."{column}"') for column in columns]
    names = ", ".join(f'"{column}"' for column in columns)
    cursor.execute(
        f"INSERT INTO {table} ({names}) SELECT {', '.join(values)} "
        f'FROM {table} AS t, generate_series(1, %(count)s) AS g WHERE t."{pk}" = %(template)s',
        {**params, "count": count, "template": template_pk},
    )


def stats_sql() -> str:
    """A year of daily aggregates for every current contract and ``STAT_AGENTS`` agents."""
    from governance.contracts.models import Contract, ContractDailyStat

    return f"""INSERT INTO {ContractDailyStat._meta.db_table}
                      (day, contract_name, agent_label, checks, compliant, violations)
               SELECT current_date - d, c.name, 'agent.bench.' || a, 100, 90, 10
                 FROM generate_series(0, %(days)s - 1) AS d, generate_series(1, %(agents)s) AS a,
                      (SELECT DISTINCT name FROM {Contract._meta.db_table}) AS c"""


def load(size: Size) -> None:
    from django.db import connection, transaction
    from django.utils import timezone

    from agents.envelope import JobEnvelopeIn
    from agents.jobs.submission import submit_job
    from agents.models import Agent, Job
    from agents.registry import load_manifest
    from governance.contracts import services as contracts
    from governance.contracts.models import Contract, ContractCheck
    from governance.kernel.principals import SYSTEM, Principal
    from governance.reviews.models import ReviewItem
    from memory.embeddings import get_backend
    from memory.models import Embedding, Learning
    from sessions.models import AISession

    manifests = sorted((Path(__file__).parents[1] / "agents" / "manifests").glob("*.yaml"))
    with transaction.atomic():
        for path in manifests:
            load_manifest(path.read_text(encoding="utf-8"), actor=SYSTEM)
        contracts.import_catalog(contracts.CATALOG.read_text(encoding="utf-8"), actor=SYSTEM)
    agents = list(Agent.objects.order_by("pk").values_list("pk", "agent_id"))
    agent = Agent.objects.get(agent_id="agent.seo.vlevel")
    envelope = {
        "intent": "seo_audit",
        "scope": {"entityType": "page"},
        "payload": {"urls": ["https://example.com/a"], "depth": 2},
        "context": {"source": "manual"},
    }
    job = submit_job(JobEnvelopeIn.model_validate(envelope), actor=Principal(agent=agent))[0]
    session = AISession.objects.create(agent=agent, name="template", type="CHAT")
    learning = Learning.objects.create(
        story="PD-1", gate=3, domain="seo", project="shop", text="template", tags_hash=""
    )
    contract = Contract.objects.filter(is_current=True).order_by("name")[0]
    check = ContractCheck.objects.create(
        contract=contract,
        contract_name=contract.name,
        submitted_by="bench",
        compliant=True,
        output_sha256="0" * 64,
        checked_at=timezone.now(),
    )
    item = ReviewItem.objects.create(kind="validation", title="template")
    ids = {"agents": [pk for pk, _ in agents], "n": len(agents)}
    agent_of = "(%(agents)s::bigint[])[1 + g %% %(n)s]"
    with transaction.atomic(), connection.cursor() as cursor:
        started = time.perf_counter()
        status = (
            "CASE WHEN g %% 100 < 2 THEN 'queued' WHEN g %% 100 < 3 THEN 'running' WHEN g %% 100 < 90 "
            "THEN 'succeeded' WHEN g %% 100 < 97 THEN 'failed' ELSE 'expired' END"
        )
        _clone(
            cursor,
            Job,
            job.pk,
            size.jobs,
            {
                "job_id": "gen_random_uuid()",
                "agent_id": agent_of,
                "status": status,
                "idempotency_key": "'bench-' || g",
                "created_at": "now() - g * interval '10 seconds'",
            },
            ids,
        )
        phase = "CASE WHEN g %% 100 < 95 THEN 'COMPLETED' WHEN g %% 100 < 99 THEN 'IDLE' ELSE 'WAITING_VALIDATION' END"
        _clone(
            cursor,
            AISession,
            session.pk,
            size.sessions,
            {"session_id": "gen_random_uuid()", "agent_id": agent_of, "phase": phase, "is_active": "false"},
            ids,
        )
        _clone(
            cursor,
            ContractCheck,
            check.pk,
            size.checks,
            {"compliant": "g %% 10 <> 0", "checked_at": "now() - g * interval '3 seconds'"},
            ids,
        )
        cursor.execute(stats_sql(), {"days": CONTRACT_DAYS, "agents": STAT_AGENTS})
        scope = (
            "CASE WHEN g %% 10 < 6 THEN 'story' WHEN g %% 10 < 8 THEN 'domain' WHEN g %% 10 < 9 THEN 'global' "
            "ELSE 'archived' END"
        )
        _clone(cursor, Learning, learning.pk, size.learnings, {"scope": scope, "story": "'PD-' || g"}, ids)
        cursor.execute(
            f"""INSERT INTO {Embedding._meta.db_table}
                       (kind, object_id, model, dimension, embedding, text_sha256, active, created_at)
                SELECT 'learning', id, %(model)s, 384, array_fill(0.05::real, ARRAY[384])::vector, '', true, now()
                  FROM {Learning._meta.db_table} WHERE id %% 10 <> 0""",
            {"model": get_backend().model},
        )
        pending = "CASE WHEN g %% 100 = 0 THEN 'pending' ELSE 'approved' END"
        _clone(
            cursor,
            ReviewItem,
            item.pk,
            size.reviews,
            {"status": pending, "created_at": "now() - g * interval '1 minute'"},
            ids,
        )
        cursor.execute(f"CREATE TABLE {MARKER} (size jsonb)")
        cursor.execute(f"INSERT INTO {MARKER} VALUES (%s::jsonb)", [json.dumps(asdict(size))])
        print(f"loaded in {time.perf_counter() - started:.0f} s")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


def loaded() -> dict[str, Any] | None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s)", [MARKER])
        if cursor.fetchone()[0] is None:
            return None
        cursor.execute(f"SELECT size::text FROM {MARKER}")
        return json.loads(cursor.fetchone()[0])


def scrape() -> bytes:
    from django.test import RequestFactory

    from governance.kernel import metrics

    response = metrics.view(RequestFactory().get("/metrics", REMOTE_ADDR="127.0.0.1"))
    assert response.status_code == 200, response.status_code
    return response.content


def explain() -> list[dict[str, Any]]:
    """Each statement of a scrape, run again under EXPLAIN ANALYZE: its time and plan."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        scrape()
    plans = []
    with connection.cursor() as cursor:
        for query in queries.captured_queries:
            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {query['sql']}")
            plan = [row[0] for row in cursor.fetchall()]
            took = next((line for line in plan if line.startswith("Execution Time")), "")
            plans.append({"sql": query["sql"][:300], "execution": took, "plan": plan})
    return plans


def run(size: Size | None = None, scrapes: int = 20, reload: bool = False) -> dict[str, Any]:
    size = size or Size(checks=10_000_000, jobs=1_000_000, sessions=1_000_000, learnings=100_000, reviews=100_000)
    where = prepare_database(DB_NAME, check=require_bench_database)
    before = loaded()
    if before != asdict(size) or reload:
        if before is not None:
            raise SystemExit(f"{DB_NAME} holds another size {before}: drop the database to load {asdict(size)}")
        load(size)
    load_before = os.getloadavg()
    scrape()  # unrecorded: connections and caches
    times = []
    for _ in range(scrapes):
        started = time.perf_counter()
        body = scrape()
        times.append((time.perf_counter() - started) * 1000)
    ordered = sorted(times)
    plans = explain()
    measured = {
        "scrapes": scrapes,
        "p50_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(percentile(ordered, 95), 1),
        "max_ms": round(ordered[-1], 1),
        "bytes": len(body),
        "statements": len(plans),
    }
    result = {
        "benchmark": "metrics",
        "database": where,
        "size": asdict(size),
        "measured": measured,
        "statements": plans,
        "targets": {f"scrape p95 < {TARGET_MS:.0f} ms": percentile(ordered, 95) < TARGET_MS},
        "machine": machine(where, load_before, prometheus_client=package_version("prometheus-client")),
    }
    lines = [
        f"scrape of /metrics, {scrapes} times: p50 {measured['p50_ms']} ms, p95 {measured['p95_ms']} ms, "
        f"{len(plans)} statements"
    ]
    lines += [f"  {plan['execution']:<28} {plan['sql'][:110]}" for plan in plans]
    return publish("metrics", result, "\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench metrics")
    parser.add_argument("--checks", type=int, default=10_000_000)
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--sessions", type=int, default=1_000_000)
    parser.add_argument("--learnings", type=int, default=100_000)
    parser.add_argument("--reviews", type=int, default=100_000)
    parser.add_argument("--scrapes", type=int, default=20)
    parser.add_argument("--reload", action="store_true")
    args = parser.parse_args(argv)
    size = Size(args.checks, args.jobs, args.sessions, args.learnings, args.reviews)
    run(size, scrapes=args.scrapes, reload=args.reload)
    return 0
