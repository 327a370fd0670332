"""Contract report pages with a million stored checks (governance issue: "report pages under
300 ms with 1M stored checks").

Database ``governance_bench_contract_reports`` on the embedded PostgreSQL (its own: the checks
table is emptied and refilled). The shipped catalog is imported, then ``--checks`` audit records
(default 1 000 000) are written set-wise by SQL over ``--days`` days, 3 agents and every contract,
about 30 % non-compliant with realistic violations, and the daily aggregates are rebuilt from them
by one ``GROUP BY`` (what ``contracts.check`` maintains row by row in production). The pages are
then requested through Django's test client by a logged-in Viewer, ``--requests`` times each after
two warm-up requests, and the baseline is the same report computed from the checks table itself
(one aggregate over a million rows), which is what the aggregates spare the pages.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.common import machine, percentile, prepare_database, publish

DB_NAME = "governance_bench_contract_reports"
TARGET_MS = 300.0


def require_bench_database(name: str) -> None:
    if name != DB_NAME:
        raise SystemExit(f"refusing to fill {name!r}: this benchmark empties its tables (run it without DATABASE_URL)")


def fill(checks: int, days: int) -> dict[str, Any]:
    """Audit records and their aggregates, written by SQL (a million rows through the ORM would
    measure the ORM, not the pages)."""
    from django.db import connection

    from agents.models import Agent
    from governance.contracts import services as contracts
    from governance.kernel.principals import SYSTEM

    contracts.import_catalog(contracts.CATALOG.read_text(encoding="utf-8"), actor=SYSTEM)
    agents = [
        Agent.objects.get_or_create(agent_id=f"agent.bench.{n}", defaults={"name": f"bench {n}"})[0] for n in range(3)
    ]
    started = time.perf_counter()
    with connection.cursor() as cursor:
        tables = "governance_contractcheck, governance_contractdailystat, governance_contractviolationstat"
        cursor.execute(f"TRUNCATE {tables}")
        cursor.execute(
            """
            WITH c AS (SELECT row_number() OVER (ORDER BY name) - 1 AS n, id, name FROM governance_contract
                        WHERE is_current),
                 total AS (SELECT count(*) AS k FROM c)
            INSERT INTO governance_contractcheck
                (contract_id, contract_name, agent_id, submitted_by, source, compliant, violations, warnings,
                 output, output_sha256, checked_at)
            SELECT c.id, c.name, (%(agents)s::bigint[])[1 + g %% 3], 'bench', 'batch', (g %% 10) >= 3,
                   CASE WHEN (g %% 10) < 3 THEN jsonb_build_array(jsonb_build_object(
                        'path', CASE WHEN g %% 2 = 0 THEN 'items[' || (g %% 7) || '].id' ELSE 'confidence' END,
                        'code', CASE WHEN g %% 2 = 0 THEN 'wrong_type' ELSE 'out_of_range' END,
                        'message', 'bench')) ELSE '[]'::jsonb END,
                   '[]'::jsonb, jsonb_build_object('n', g), md5(g::text) || md5(g::text),
                   now() - ((g %% (%(days)s * 24)) || ' hours')::interval
              FROM generate_series(1, %(checks)s) AS g
              CROSS JOIN total
              JOIN c ON c.n = g %% total.k
            """,
            {"agents": [a.pk for a in agents], "days": days, "checks": checks},
        )
        cursor.execute(
            """
            INSERT INTO governance_contractdailystat (day, contract_name, agent_label, checks, compliant, violations)
            SELECT k.checked_at::date, k.contract_name, a.agent_id, count(*), count(*) FILTER (WHERE k.compliant),
                   sum(jsonb_array_length(k.violations))
              FROM governance_contractcheck k JOIN agents_agent a ON a.id = k.agent_id
             GROUP BY 1, 2, 3
            """
        )
        cursor.execute(
            """
            INSERT INTO governance_contractviolationstat (day, contract_name, path, code, count)
            SELECT k.checked_at::date, k.contract_name, regexp_replace(v->>'path', '\\[\\d+\\]', '[*]', 'g'),
                   v->>'code', count(*)
              FROM governance_contractcheck k, jsonb_array_elements(k.violations) v
             GROUP BY 1, 2, 3, 4
            """
        )
        cursor.execute("VACUUM ANALYZE governance_contractcheck")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), count(*) FILTER (WHERE NOT compliant) FROM governance_contractcheck")
        stored, failing = cursor.fetchone()
    return {
        "checks": stored,
        "failing": failing,
        "agents": [a.agent_id for a in agents],
        "days": days,
        "fill_s": round(time.perf_counter() - started, 1),
    }


def viewer_client() -> Any:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.test import Client

    user, _ = get_user_model().objects.get_or_create(username="bench-viewer")
    user.groups.add(Group.objects.get(name="Viewer"))
    client = Client(HTTP_HOST="127.0.0.1")  # a host the settings allow
    client.force_login(user)
    return client


def timed(call: Callable[[], None], requests: int) -> dict[str, float]:
    for _ in range(2):
        call()
    samples = []
    for _ in range(requests):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    ordered = sorted(samples)
    return {
        "p50_ms": round(percentile(ordered, 50) * 1000, 1),
        "p95_ms": round(percentile(ordered, 95) * 1000, 1),
        "max_ms": round(ordered[-1] * 1000, 1),
    }


def page(client: Any, url: str) -> Callable[[], None]:
    def call() -> None:
        response = client.get(url)
        if response.status_code != 200:
            raise SystemExit(f"{url}: HTTP {response.status_code}")
        if hasattr(response, "streaming_content"):
            b"".join(response.streaming_content)

    return call


def from_checks_table(name: str | None) -> Callable[[], None]:
    """The baseline: the report's numbers computed from the audit records themselves (one
    contract's, or the fleet's ranking over every check)."""
    from django.db.models import Count, Q

    from governance.contracts.models import ContractCheck

    totals = {"checks": Count("id"), "compliant": Count("id", filter=Q(compliant=True))}

    def call() -> None:
        if name is None:
            list(ContractCheck.objects.values("contract_name").annotate(**totals))
            return
        rows = ContractCheck.objects.filter(contract_name=name)
        rows.aggregate(**totals)
        list(rows.values("checked_at__date").annotate(n=Count("id")))

    return call


def run(checks: int = 1_000_000, days: int = 30, requests: int = 20) -> dict[str, Any]:
    load_before = os.getloadavg()
    where = prepare_database(DB_NAME, check=require_bench_database)
    data = fill(checks, days)
    client = viewer_client()
    name = "memory_retrieval_ranking"
    pages = {
        "catalog": "/contracts/",
        "contract detail with report": f"/contracts/{name}/",
        "contract report.csv": f"/contracts/{name}/report.csv",
        "contract report.md": f"/contracts/{name}/report.md",
        "fleet": "/contracts/fleet/",
        "fleet report.csv": "/contracts/fleet/report.csv",
        "agent report": f"/contracts/agents/{data['agents'][0]}/",
    }
    measured = {label: timed(page(client, url), requests) for label, url in pages.items()}
    for label, numbers in measured.items():
        print(f"  {label:<30} p50 {numbers['p50_ms']:>7} ms  p95 {numbers['p95_ms']:>7} ms")
    print(f"  {data['checks']:,} checks ({data['failing']:,} failing) written in {data['fill_s']} s")
    baseline = {
        "one contract": timed(from_checks_table(name), max(3, requests // 4)),
        "fleet ranking": timed(from_checks_table(None), 3),
    }
    for label, numbers in baseline.items():
        print(f"  baseline, {label} from the checks table: p50 {numbers['p50_ms']} ms")
    targets = {
        f"{label} p95 < {TARGET_MS:.0f} ms with {data['checks']:,} checks": n["p95_ms"] < TARGET_MS
        for label, n in measured.items()
    }
    result = {
        "benchmark": "contract_reports",
        "data": data,
        "pages": measured,
        "baseline_from_checks_table": baseline,
        "targets": targets,
        "machine": machine(where, load_before),
    }
    return publish("contract_reports", result)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.contract_reports", description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=1_000_000, help="stored audit records (1 000 000)")
    parser.add_argument("--days", type=int, default=30, help="days they spread over (30)")
    parser.add_argument("--requests", type=int, default=20, help="timed requests per page (20)")
    args = parser.parse_args(argv)
    run(args.checks, args.days, args.requests)
    return 0


if __name__ == "__main__":
    sys.exit(main())
