"""Scale check: the operator pages and list APIs with 10 million contract checks, 1 million
sessions and their messages, and 1 million tool calls; and a full retention run over them.

Database ``governance_bench_scale`` on the embedded PostgreSQL (its own: the big tables are
emptied and refilled, so any other name is refused). The rows are written set-wise by SQL straight
into the migrated tables, spread over ``--days`` days; a marker table remembers what was loaded,
so a later run with the same sizes measures at once (``--reload`` loads again). The pages are then
requested over real HTTP from a gunicorn started as ``make run`` does, as a logged-in Admin-role
operator (browser session cookie) and with that operator's API key, ``--requests`` times each on
one keep-alive connection after two unrecorded requests. The retention run works on a copy of the
database (``CREATE DATABASE ... TEMPLATE``), so the loaded data stays as it was for the next run.

Run: ``python -m bench scale`` (``--checks 10000000 --sessions 1000000 --tool-calls 1000000``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from bench.common import (
    RESULTS_DIR,
    SETTINGS,
    machine,
    package_version,
    percentile,
    prepare_database,
    publish,
    until_interrupted,
)
from bench.jobs import WORKERS, free_port, start_server, stop_embedded_db_if_ours, stop_server, wait_healthy

DB_NAME = "governance_bench_scale"
COPY_NAME = f"{DB_NAME}_retention"
MARKER = "bench_scale_dataset"
INDEXES = "bench_scale_dropped_indexes"
TARGET_MS = 300.0
WARMUP_REQUESTS = 2
PAGE_BUDGET_S = 30.0
MIN_SAMPLES = 3
SLOW_S = 1.0

# The fleet the rows spread over (the issue: ~50 agents, ~20 contracts; tools across servers).
AGENTS = 50
ACTIVE_AGENTS = 20  # agents with an active chat: at most one each (one_active_session_per_agent)
SERVERS = {
    "crawler": ("fetch_page", "list_links", "snapshot", "robots"),
    "search": ("query", "suggest", "rank"),
    "cms": ("get_page", "update_meta", "publish", "list_pages"),
    "analytics": ("traffic", "conversions", "top_pages"),
    "files": ("read", "write", "list"),
}
REFUSALS = ("RateLimited", "Forbidden", "PendingApproval", "InvalidInput", "NotFound")


@dataclass(frozen=True)
class Size:
    checks: int
    sessions: int
    tool_calls: int
    days: int


def require_bench_database(name: str) -> None:
    if name != DB_NAME:
        raise SystemExit(f"refusing to fill {name!r}: this benchmark empties its tables (run it without DATABASE_URL)")


# --- Loading -------------------------------------------------------------------------------------


def tables() -> dict[str, str]:
    """The big tables by what they hold, as the models name them."""
    from agents.models import ToolCall
    from gateway.models import GatewayCall
    from governance.contracts.models import ContractCheck, ContractDailyStat, ContractViolationStat
    from sessions.models import AISession, SessionMessage

    models = {
        "checks": ContractCheck,
        "daily_stats": ContractDailyStat,
        "violation_stats": ContractViolationStat,
        "sessions": AISession,
        "messages": SessionMessage,
        "tool_calls": ToolCall,
        "gateway_calls": GatewayCall,
    }
    return {label: model._meta.db_table for label, model in models.items()}


def loaded(size: Size) -> dict[str, Any] | None:
    """What an earlier run loaded, when it is this size (the marker is written last, so a load
    that was interrupted has none)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE IF NOT EXISTS {MARKER} (size jsonb NOT NULL, data jsonb NOT NULL)")
        cursor.execute(f"SELECT size::text, data::text FROM {MARKER}")  # Django reads jsonb as text
        row = cursor.fetchone()
    return json.loads(row[1]) if row and json.loads(row[0]) == asdict(size) else None


def fleet() -> dict[str, Any]:
    """Contracts (the shipped catalog), agents, upstream servers and the operator: few rows,
    through the services and the ORM as an operator would create them."""
    from agents.models import Agent
    from agents.registries import active_values
    from agents.vocabulary import Registry
    from gateway.models import UpstreamServer
    from governance.contracts import services as contracts
    from governance.contracts.models import Contract
    from governance.kernel.principals import SYSTEM

    contracts.import_catalog(contracts.CATALOG.read_text(encoding="utf-8"), actor=SYSTEM)
    roles, domains = active_values(Registry.ROLES), active_values(Registry.DOMAINS)
    agents = [
        Agent.objects.get_or_create(
            agent_id=f"agent.scale.fleet_{n:02d}",
            defaults={"name": f"scale {n}", "role": roles[n % len(roles)], "domain": domains[n % len(domains)]},
        )[0]
        for n in range(AGENTS)
    ]
    servers = [
        UpstreamServer.objects.get_or_create(name=name, defaults={"url": f"http://127.0.0.1:9/{name}/mcp"})[0]
        for name in SERVERS
    ]
    tools = [(server.pk, f"mcp__{server.name}__{tool}") for server in servers for tool in SERVERS[server.name]]
    current = list(Contract.objects.filter(is_current=True).order_by("name").values_list("pk", "name"))
    return {"agents": [a.pk for a in agents], "contracts": current, "tools": tools}


def drop_secondary_indexes(cursor: Any, tables: list[str]) -> None:
    """Drop the tables' indexes that back no constraint, keeping their definitions in a side table
    first: they are built again after the load (faster than maintaining them row by row), and a
    load interrupted in between still finds them on the next run."""
    cursor.execute(f"CREATE TABLE IF NOT EXISTS {INDEXES} (name text PRIMARY KEY, definition text NOT NULL)")
    cursor.execute(
        f"""
        INSERT INTO {INDEXES} (name, definition)
        SELECT i.indexname, i.indexdef FROM pg_indexes i
         WHERE i.tablename = ANY(%s) AND i.schemaname = current_schema()
           AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = (quote_ident(i.indexname))::regclass)
        ON CONFLICT (name) DO NOTHING
        """,
        [tables],
    )
    cursor.execute(f"SELECT name FROM {INDEXES}")
    for (name,) in cursor.fetchall():
        cursor.execute(f"DROP INDEX IF EXISTS {name}")


def build_secondary_indexes(cursor: Any) -> int:
    """Build what :func:`drop_secondary_indexes` dropped; returns how many."""
    cursor.execute(f"SELECT name, definition FROM {INDEXES}")
    saved = cursor.fetchall()
    for _, definition in saved:
        cursor.execute(definition)
    cursor.execute(f"DELETE FROM {INDEXES}")
    return len(saved)


def load(size: Size) -> dict[str, Any]:
    """Empty the big tables and fill them; returns the rows and the seconds per table.

    Foreign keys are not checked during the load (``session_replication_role = replica``: the
    rows point at the fleet by construction) and secondary indexes are built at the end. Rows are
    written oldest first, as the append-only tables they stand for fill up, so a time window reads
    a contiguous part of each table as it does in production."""
    from django.db import connection

    data = fleet()
    names = tables()
    seconds: dict[str, float] = {}
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {MARKER}")
        cursor.execute(f"TRUNCATE {', '.join(names.values())} CASCADE")
        cursor.execute("SET synchronous_commit = off")
        cursor.execute("SET maintenance_work_mem = '512MB'")
        cursor.execute("SET session_replication_role = replica")
        drop_secondary_indexes(cursor, list(names.values()))
        steps: list[tuple[str, Callable[[], None]]] = [
            ("checks", lambda: _checks(cursor, names, data, size)),
            ("daily/violation stats", lambda: _stats(cursor, names)),
            ("sessions", lambda: _sessions(cursor, names, data, size)),
            ("messages", lambda: _messages(cursor, names)),
            ("tool + gateway calls", lambda: _calls(cursor, names, data, size)),
        ]
        for label, step in steps:
            started = time.perf_counter()
            step()
            seconds[label] = round(time.perf_counter() - started, 1)
            print(f"  loaded {label:<24} {seconds[label]:>8.1f} s", flush=True)
        started = time.perf_counter()
        built = build_secondary_indexes(cursor)
        seconds["secondary indexes"] = round(time.perf_counter() - started, 1)
        print(f"  built {built} secondary indexes {seconds['secondary indexes']:>15.1f} s", flush=True)
        cursor.execute("SET session_replication_role = DEFAULT")
        started = time.perf_counter()
        for table in names.values():
            cursor.execute(f"VACUUM (ANALYZE) {table}")
        seconds["vacuum analyze"] = round(time.perf_counter() - started, 1)
        print(f"  vacuum analyze {seconds['vacuum analyze']:>22.1f} s", flush=True)
        rows = {}
        for label, table in names.items():
            cursor.execute(f"SELECT count(*) FROM {table}")
            rows[label] = cursor.fetchone()[0]
        cursor.execute("SELECT pg_database_size(current_database())")
        database_bytes = cursor.fetchone()[0]
        result = {
            "rows": rows,
            "seconds": seconds,
            "total_s": round(sum(seconds.values()), 1),
            "database_gb": round(database_bytes / 1e9, 2),
        }
        cursor.execute(
            f"INSERT INTO {MARKER} (size, data) VALUES (%s::jsonb, %s::jsonb)",
            [json.dumps(asdict(size)), json.dumps(result)],
        )
    return result


def _checks(cursor: Any, names: dict[str, str], data: dict[str, Any], size: Size) -> None:
    """90 % compliant; violations and warnings as the validator writes them; an output of a few
    hundred bytes (an audit of a few pages)."""
    cursor.execute(
        f"""
        WITH c AS (SELECT row_number() OVER () - 1 AS n, id, name
                     FROM unnest(%(contract_ids)s::bigint[], %(contract_names)s::text[]) AS t(id, name)),
             g AS (SELECT g, random() AS r, floor(random() * 1000)::int AS h,
                          now() - make_interval(days => %(days)s) * (1 - g::float8 / %(checks)s) AS at
                     FROM generate_series(1, %(checks)s) AS g)
        INSERT INTO {names["checks"]}
            (contract_id, contract_name, agent_id, submitted_by, session_id, job_id, source, compliant,
             violations, warnings, output, output_sha256, checked_at)
        SELECT c.id, c.name, (%(agents)s::bigint[])[1 + g.h %% %(n_agents)s],
               'agent:' || ((%(agents)s::bigint[])[1 + g.h %% %(n_agents)s]), NULL, NULL,
               (ARRAY['api', 'api', 'tool', 'tool', 'batch', 'log'])[1 + g.h %% 6], g.r >= 0.1,
               CASE WHEN g.r < 0.1 THEN jsonb_build_array(jsonb_build_object(
                    'path', CASE WHEN g.h %% 2 = 0 THEN 'items[' || (g.h %% 7) || '].id' ELSE 'confidence' END,
                    'code', CASE WHEN g.h %% 2 = 0 THEN 'wrong_type' ELSE 'out_of_range' END,
                    'message', CASE WHEN g.h %% 2 = 0 THEN 'expected a string' ELSE 'must be between 0 and 1' END))
                    ELSE '[]'::jsonb END,
               CASE WHEN g.h %% 20 = 0
                    THEN '[{{"path": "summary", "code": "too_long", "message": "over 500 chars"}}]'::jsonb
                    ELSE '[]'::jsonb END,
               jsonb_build_object(
                    'status', 'done', 'confidence', round((0.5 + g.r / 2)::numeric, 3),
                    'items', jsonb_build_array(
                        jsonb_build_object('id', 'p' || g.g, 'url', 'https://example.com/page/' || g.g,
                                           'score', g.h),
                        jsonb_build_object('id', 'q' || g.g, 'url', 'https://example.com/post/' || g.h,
                                           'score', g.h / 2)),
                    'summary', left(repeat('The page loads quickly and its title matches the query. ', 4),
                                    80 + g.h / 5)),
               md5(g.g::text) || md5(g.h::text), g.at
          FROM g JOIN c ON c.n = g.g %% %(n_contracts)s
        """,
        {
            "contract_ids": [pk for pk, _ in data["contracts"]],
            "contract_names": [name for _, name in data["contracts"]],
            "n_contracts": len(data["contracts"]),
            "agents": data["agents"],
            "n_agents": len(data["agents"]),
            "days": size.days,
            "checks": size.checks,
        },
    )


def _stats(cursor: Any, names: dict[str, str]) -> None:
    """The daily aggregates ``contracts.check`` maintains row by row, rebuilt by one GROUP BY,
    day after day as they accrue."""
    cursor.execute(
        f"""
        INSERT INTO {names["daily_stats"]} (day, contract_name, agent_label, checks, compliant, violations)
        SELECT k.checked_at::date, k.contract_name, a.agent_id, count(*), count(*) FILTER (WHERE k.compliant),
               sum(jsonb_array_length(k.violations))
          FROM {names["checks"]} k JOIN agents_agent a ON a.id = k.agent_id
         GROUP BY 1, 2, 3 ORDER BY 1
        """
    )
    cursor.execute(
        f"""
        INSERT INTO {names["violation_stats"]} (day, contract_name, path, code, count)
        SELECT k.checked_at::date, k.contract_name, regexp_replace(v->>'path', '\\[\\d+\\]', '[*]', 'g'),
               v->>'code', count(*)
          FROM {names["checks"]} k, jsonb_array_elements(k.violations) v
         WHERE NOT k.compliant
         GROUP BY 1, 2, 3, 4 ORDER BY 1
        """
    )


def _sessions(cursor: Any, names: dict[str, str], data: dict[str, Any], size: Size) -> None:
    """60 % chats, 35 % automation runs, 5 % seed sessions; 2 to 10 round trips each. 95 % are
    finished (mostly COMPLETED, some timeouts, errors, cancellations, limits), the other chats
    suspended; then the newest chat of ``ACTIVE_AGENTS`` agents is the agent's one active session."""
    cursor.execute(
        f"""
        INSERT INTO {names["sessions"]}
            (session_id, agent_id, name, type, require_validation, phase, waiting_context, total_roundtrips,
             last_event_time, last_user_interaction_time, automation_id, trigger, scheduled_execution_time,
             queued_at, provider_id, provider_session_id, created_at, last_activity, is_active, end_reason,
             pending_end_reason, timer_at, timer_event, phase_deadline_at, tokens_used, story, domain, project,
             memory_served_at)
        SELECT gen_random_uuid(), (%(agents)s::bigint[])[1 + s.h %% %(n_agents)s],
               CASE WHEN s.kind = 'CHAT' THEN 'Chat ' ELSE 'Audit run ' END || s.g, s.kind, s.h %% 10 = 0,
               CASE WHEN s.finished THEN 'COMPLETED' ELSE 'IDLE' END, NULL, s.rt,
               s.at + s.rt * interval '40 seconds', s.at + s.rt * interval '30 seconds', NULL,
               CASE WHEN s.kind = 'AUTOMATION' THEN 'SCHEDULED' ELSE '' END, NULL, NULL, 'anthropic',
               'prov_' || s.g, s.at, s.at + s.rt * interval '40 seconds', false,
               CASE WHEN NOT s.finished THEN 'SUSPENDED'
                    WHEN s.h < 900 THEN 'COMPLETED' WHEN s.h < 940 THEN 'TIMEOUT' WHEN s.h < 965 THEN 'ERROR'
                    WHEN s.h < 985 THEN 'CANCELLED' ELSE 'LIMIT_REACHED' END,
               NULL, NULL, '', NULL,
               jsonb_build_object('input', 1200 * s.rt, 'output', 300 * s.rt, 'cacheWrite', 0, 'cacheRead', 800 * s.rt),
               '', '', '', NULL
          FROM (SELECT g, h, now() - make_interval(days => %(days)s) * (1 - g::float8 / %(sessions)s) AS at,
                       2 + g %% 9 AS rt,
                       CASE WHEN h %% 20 < 12 THEN 'CHAT' WHEN h %% 20 < 19 THEN 'AUTOMATION' ELSE 'SEED' END AS kind,
                       NOT (h %% 20 < 12 AND h %% 19 = 0) AS finished
                  FROM (SELECT g, floor(random() * 1000)::int AS h FROM generate_series(1, %(sessions)s) AS g) AS r
               ) AS s
        """,
        {"agents": data["agents"], "n_agents": len(data["agents"]), "days": size.days, "sessions": size.sessions},
    )
    cursor.execute(
        f"""
        UPDATE {names["sessions"]} SET is_active = true, phase = 'IDLE', end_reason = NULL, last_activity = now()
         WHERE session_id IN (
               SELECT DISTINCT ON (agent_id) session_id FROM {names["sessions"]}
                WHERE type = 'CHAT' AND agent_id = ANY(%(active)s) ORDER BY agent_id, created_at DESC)
        """,
        {"active": data["agents"][:ACTIVE_AGENTS]},
    )


def _messages(cursor: Any, names: dict[str, str]) -> None:
    """Per round trip a user message and the AI's answer (its parsed message and original JSON),
    then one system message: 5 to 21 messages a session, 40 s apart."""
    cursor.execute(
        f"""
        INSERT INTO {names["messages"]}
            (message_id, session_id, seq, timestamp, sender, rich_content, text_content, ai_message,
             ai_message_json, system_message, system_type, execution_metadata, exclude_from_prompt,
             fallback_kind, removed_at)
        SELECT gen_random_uuid(), s.session_id, m, s.created_at + m * interval '20 seconds',
               CASE WHEN m > 2 * s.total_roundtrips THEN 'SYSTEM' WHEN m %% 2 = 1 THEN 'USER' ELSE 'AI' END,
               CASE WHEN m %% 2 = 1 AND m <= 2 * s.total_roundtrips
                    THEN jsonb_build_object('linearText', 'Check the titles of https://example.com/page/' || m) END,
               CASE WHEN m %% 2 = 1 AND m <= 2 * s.total_roundtrips
                    THEN 'Check the titles of https://example.com/page/' || m || ' and tell me which are too long.' END,
               CASE WHEN m %% 2 = 0 THEN jsonb_build_object(
                    'preText', 'I looked at the page and its title is 72 characters long, over the 60 advised.',
                    'postText', 'Shall I propose a shorter title?', 'dataQueries', '[]'::jsonb) END,
               CASE WHEN m %% 2 = 0 THEN '{{"preText": "I looked at the page and its title is 72 characters long, '
                    'over the 60 advised.", "postText": "Shall I propose a shorter title?", "dataQueries": []}}' END,
               CASE WHEN m > 2 * s.total_roundtrips THEN jsonb_build_object(
                    'type', 'DATA_ADDED', 'summary', 'Page data added for ' || s.total_roundtrips || ' pages') END,
               CASE WHEN m > 2 * s.total_roundtrips THEN 'DATA_ADDED' ELSE '' END,
               NULL, false, '', NULL
          FROM {names["sessions"]} s, generate_series(1, 2 * s.total_roundtrips + 1) AS m
        """,
        {},
    )


def _calls(cursor: Any, names: dict[str, str], data: dict[str, Any], size: Size) -> None:
    """Gateway calls over 5 servers and 17 tools: 88 % OK, 3 % tool errors, 1 % upstream failures,
    1 % dry runs, 7 % refused (rate limits mostly). Every call that was not refused has its tool
    call (the row the rate limit counts), with the same id."""
    cursor.execute(
        """
        CREATE TEMP TABLE scale_calls AS
        SELECT g, h, now() - make_interval(days => %(days)s) * (1 - g::float8 / %(calls)s) AS at,
               CASE WHEN h < 880 THEN 'ok' WHEN h < 910 THEN 'tool_error' WHEN h < 920 THEN 'upstream_failed'
                    WHEN h < 930 THEN 'dry_run' ELSE 'refused' END AS outcome
          FROM (SELECT g, floor(random() * 1000)::int AS h FROM generate_series(1, %(calls)s) AS g) AS r
        """,
        {"days": size.days, "calls": size.tool_calls},
    )
    params = {
        "agents": data["agents"],
        "n_agents": len(data["agents"]),
        "servers": [server for server, _ in data["tools"]],
        "tools": [tool for _, tool in data["tools"]],
        "n_tools": len(data["tools"]),
        "refusals": list(REFUSALS),
    }
    agent = "(%(agents)s::bigint[])[1 + (c.g * 7 + c.h) %% %(n_agents)s]"
    tool = "(%(tools)s::text[])[1 + c.g %% %(n_tools)s]"
    cursor.execute(
        f"""
        INSERT INTO {names["tool_calls"]} (id, agent_id, tool_id, job_id, called_at, dry_run)
        SELECT c.g, {agent}, {tool}, NULL, c.at, c.outcome = 'dry_run' FROM scale_calls c WHERE c.outcome <> 'refused'
        """,
        params,
    )
    table = names["tool_calls"]
    cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
    cursor.execute(
        f"""
        INSERT INTO {names["gateway_calls"]}
            (agent_id, tool_id, server_id, job_id, session_id, arguments_hash, arguments, called_at, latency_ms,
             outcome, refusal, error_class, tool_call_id, contract_check_id)
        SELECT {agent}, {tool}, (%(servers)s::bigint[])[1 + c.g %% %(n_tools)s], NULL, NULL,
               md5(c.g::text) || md5(c.h::text),
               jsonb_build_object('url', 'https://example.com/page/' || c.g, 'depth', c.h %% 3),
               c.at, CASE WHEN c.outcome IN ('ok', 'tool_error', 'upstream_failed') THEN 20 + c.h * 0.8 END,
               c.outcome,
               CASE WHEN c.outcome = 'refused' THEN
                    CASE WHEN c.h < 975 THEN 'RateLimited' ELSE (%(refusals)s::text[])[1 + c.g %% 5] END ELSE '' END,
               CASE WHEN c.outcome = 'upstream_failed' THEN 'ConnectError' ELSE '' END,
               CASE WHEN c.outcome <> 'refused' THEN c.g END, NULL
          FROM scale_calls c
        """,
        params,
    )
    cursor.execute("DROP TABLE scale_calls")


# --- Measuring -----------------------------------------------------------------------------------


def operator() -> tuple[str, str]:
    """A staff user with the Admin role (every operator page and changelist), its browser session
    cookie and an operator API key bound to it. Returns (cookie header, bearer key)."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.test import Client

    from governance.kernel.principals import SYSTEM
    from governance.kernel.services import issue_api_key

    user, _ = get_user_model().objects.get_or_create(username="bench-scale-operator", defaults={"is_staff": True})
    user.groups.add(Group.objects.get(name="Admin"))
    client = Client()
    client.force_login(user)
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
    _, key = issue_api_key(actor=SYSTEM, name="bench-scale", user=user)
    return cookie, key


def targets_to_request() -> tuple[dict[str, str], dict[str, str]]:
    """(pages, list APIs): each first page with the default paging and a filtered or later page,
    over the rows the load wrote."""
    from agents.models import Agent
    from governance.contracts.models import Contract
    from sessions.models import AISession

    agent = Agent.objects.filter(agent_id__startswith="agent.scale.").order_by("agent_id").first()
    assert agent is not None
    contract = Contract.objects.filter(is_current=True).order_by("name").first()
    assert contract is not None
    session = AISession.objects.filter(agent=agent, total_roundtrips=10).only("pk").first()
    assert session is not None
    a, c, s = agent.agent_id, contract.name, session.pk
    week_ago = (date.today() - timedelta(days=7)).isoformat()
    pages = {
        "inbox": "/inbox/",
        "contracts catalog": "/contracts/",
        "contracts fleet": "/contracts/fleet/",
        "contract detail": f"/contracts/{c}/",
        "contract agent report": f"/contracts/agents/{a}/",
        "agents": "/agents/",
        "agent detail": f"/agents/{a}/",
        "jobs": "/agents/jobs/",
        "sessions": "/sessions/",
        "sessions, suspended chats": "/sessions/?type=CHAT&phase=IDLE&active=no",
        "sessions, page 100": "/sessions/?page=100",
        "session detail": f"/sessions/{s}/",
        "memory": "/memory/",
        "subjects": "/memory/subjects/",
        "gateway servers": "/gateway/",
        "gateway calls": "/gateway/calls/",
        "gateway calls, agent refused": f"/gateway/calls/?agent={a}&outcome=refused",
        "gateway tools (7 days)": "/gateway/tools/",
        "gateway tools (90 days)": "/gateway/tools/?days=90",
        "gateway agent": f"/gateway/agents/{a}/",
        "admin checks": "/admin/governance/contractcheck/",
        "admin checks, failing one contract": f"/admin/governance/contractcheck/?compliant__exact=0&contract_name={c}",
        "admin daily stats": "/admin/governance/contractdailystat/",
        "admin sessions": "/admin/ai_sessions/aisession/",
        "admin sessions, IDLE": "/admin/ai_sessions/aisession/?phase__exact=IDLE",
        "admin messages": "/admin/ai_sessions/sessionmessage/",
        "admin messages, system": "/admin/ai_sessions/sessionmessage/?sender__exact=SYSTEM",
        "admin gateway calls": "/admin/gateway/gatewaycall/",
        "admin gateway calls, refused": "/admin/gateway/gatewaycall/?outcome__exact=refused",
        "admin tool calls": "/admin/agents/toolcall/",
        "admin tool calls, one agent": f"/admin/agents/toolcall/?agent__id__exact={agent.pk}",
        "admin audit events": "/admin/governance/auditevent/",
    }
    apis = {
        "agents": "/api/v1/agents",
        "agents, offset 20": "/api/v1/agents?limit=10&offset=20",
        "contracts": "/api/v1/contracts",
        "contracts, q": "/api/v1/contracts?q=seo",
        "contract stats": f"/api/v1/contracts/{c}/stats",
        "contract stats, 7 days": f"/api/v1/contracts/{c}/stats?since={week_ago}",
        "jobs": "/api/v1/jobs",
        "jobs, agent": f"/api/v1/jobs?agent={a}&status=succeeded",
        "reviews": "/api/v1/reviews",
        "reviews, pending": "/api/v1/reviews?status=pending",
        "session messages": f"/api/v1/sessions/{s}/messages",
        "session messages, offset 10": f"/api/v1/sessions/{s}/messages?limit=5&offset=10",
        "clarifications": "/api/v1/memory/clarifications",
    }
    return pages, apis


def timed(port: int, path: str, headers: dict[str, str], requests: int, warmup: int = WARMUP_REQUESTS) -> dict:
    """``requests`` GETs on one keep-alive connection after ``warmup`` unrecorded ones; any answer
    but 200 is counted (and its status kept), not timed. Seconds-long pages would take the run's
    hour: a warm-up request slower than ``SLOW_S`` ends the warm-up (what it warms is noise
    there), and once ``PAGE_BUDGET_S`` have passed the page stops at ``MIN_SAMPLES`` timed
    requests (its p95 is then its slowest)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    samples: list[float] = []
    statuses: dict[int, int] = {}
    size = 0
    began = time.perf_counter()
    try:
        n = 0
        while n < warmup + requests:
            if time.perf_counter() - began > PAGE_BUDGET_S and len(samples) >= min(MIN_SAMPLES, requests):
                break
            started = time.perf_counter()
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            body = response.read()
            elapsed = time.perf_counter() - started
            statuses[response.status] = statuses.get(response.status, 0) + 1
            if n >= warmup and response.status == 200:
                samples.append(elapsed)
                size = len(body)
            elif n < warmup and elapsed > SLOW_S:
                warmup = n + 1
            n += 1
    finally:
        conn.close()
    ordered = sorted(samples)
    return {
        "path": path,
        "ok": len(samples),
        "statuses": statuses,
        "bytes": size,
        "p50_ms": round(percentile(ordered, 50) * 1000, 1),
        "p95_ms": round(percentile(ordered, 95) * 1000, 1),
        "max_ms": round(ordered[-1] * 1000, 1) if ordered else float("nan"),
    }


def measure(port: int, cookie: str, key: str, requests: int, only: str) -> dict[str, dict[str, Any]]:
    pages, apis = targets_to_request()
    browser = {"Cookie": cookie, "Accept": "text/html"}
    api = {"Authorization": f"Bearer {key}", "Accept": "application/json"}
    out: dict[str, dict[str, Any]] = {}
    chosen = [
        (f"{kind}: {label}", path, headers)
        for kind, paths, headers in (("page", pages, browser), ("api", apis, api))
        for label, path in paths.items()
        if not only or any(part in f"{kind}: {label}" for part in only.split(","))
    ]
    # Every gunicorn worker answers each page once before any clock runs (sync workers take
    # connections in turn: a page's own warm-up could all land on one worker).
    for _, path, headers in chosen:
        timed(port, path, headers, 0, warmup=2 * WORKERS)
    for name, path, headers in chosen:
        out[name] = numbers = timed(port, path, headers, requests)
        status = "" if set(numbers["statuses"]) == {200} else f"  statuses {numbers['statuses']}"
        print(f"  {name:<48} p50 {numbers['p50_ms']:>8} ms  p95 {numbers['p95_ms']:>8} ms{status}", flush=True)
    return out


# --- Retention -----------------------------------------------------------------------------------


def retention_function() -> Callable[..., Any] | None:
    """The retention run, wherever it lives (``run_retention(*, actor, dry_run=False)``)."""
    import importlib

    for module in ("controlplane.retention", "governance.retention", "governance.tasks", "governance.kernel.retention"):
        try:
            found = getattr(importlib.import_module(module), "run_retention", None)
        except ImportError:
            continue
        if found is not None:
            return found
    return None


def retention() -> dict[str, Any]:
    """A full retention run over a copy of the loaded database (file copy of the template: the
    loaded rows stay as they were for the next run); rows per big table before and after."""
    from django.db import connection

    from governance.kernel.principals import SYSTEM

    run_retention = retention_function()
    if run_retention is None:
        print("  retention: no run_retention found; not measured", flush=True)
        return {"measured": False, "reason": "run_retention not found"}
    connection.close()
    started = time.perf_counter()
    with connection._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {COPY_NAME}")
        cursor.execute(f"CREATE DATABASE {COPY_NAME} TEMPLATE {DB_NAME} STRATEGY FILE_COPY")
    copy_s = round(time.perf_counter() - started, 1)
    print(f"  retention: database copied in {copy_s} s", flush=True)
    connection.settings_dict["NAME"] = COPY_NAME
    try:
        before = _counts()
        started = time.perf_counter()
        outcome = run_retention(actor=SYSTEM)
        run_s = round(time.perf_counter() - started, 1)
        after = _counts()
    finally:
        connection.close()
        connection.settings_dict["NAME"] = DB_NAME
        with connection._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {COPY_NAME}")
    changed = {label: before[label] - after[label] for label in before if before[label] != after[label]}
    print(f"  retention: full run {run_s} s; rows gone per table {changed}; returned {outcome!r}"[:2000], flush=True)
    return {
        "measured": True,
        "copy_s": copy_s,
        "run_s": run_s,
        "rows_before": before,
        "rows_after": after,
        "rows_removed": changed,
        # What each step archived or pruned (an archive keeps its rows: rows_removed misses it).
        "steps": outcome.as_dict()["steps"] if hasattr(outcome, "as_dict") else repr(outcome)[:4000],
    }


def earlier(size: Size, part: str) -> dict[str, Any] | None:
    """One part (``measured`` pages or ``retention``) of the last results of this size, marked
    with the run it comes from (its commit and time say which code and data it measured): what
    ``--no-pages`` and ``--no-retention`` carry over, so the retention run (tens of minutes at
    full size) and the pages can be measured in separate runs."""
    path = RESULTS_DIR / "scale.json"
    last = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    found = last.get(part)
    if last.get("size") != asdict(size) or not found or found.get("measured") is False:
        return None
    box = last["machine"]
    return {
        "carried_from": last.get("carried_from", {}).get(part)
        or {"timestamp": box["timestamp"], "git_commit": box["git_commit"]},
        part: found,
    }


def _counts() -> dict[str, int]:
    from django.db import connection

    counts = {}
    with connection.cursor() as cursor:
        for label, table in tables().items():
            cursor.execute(f"SELECT count(*) FROM {table}")
            counts[label] = cursor.fetchone()[0]
    return counts


# --- The benchmark -------------------------------------------------------------------------------


def report(result: dict[str, Any]) -> str:
    data = result["data"]
    lines = [
        f"dataset: {', '.join(f'{label} {n:,}' for label, n in data['rows'].items())}; "
        f"{data['database_gb']} GB; loaded in {data['total_s']} s "
        f"({'this run' if result['loaded_now'] else 'by an earlier run'})",
        f"{'':<50}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}{'bytes':>10}",
    ]
    for name, n in result["measured"].items():
        lines.append(f"{name:<50}{n['p50_ms']:>9}{n['p95_ms']:>9}{n['max_ms']:>9}{n['bytes']:>10}")
    return "\n".join(lines)


def serve_and_measure(requests: int, only: str) -> dict[str, dict[str, Any]]:
    """gunicorn on the loaded database, the pages measured, gunicorn stopped."""
    from django.db import connection

    cookie, key = operator()
    connection.close()
    port = free_port()
    log = Path(tempfile.gettempdir()) / f"bench-scale-gunicorn-{port}.log"
    server = start_server(port, log, db_name=DB_NAME)
    try:
        wait_healthy(server, port, log)
        print(f"gunicorn on 127.0.0.1:{port}, {requests} requests per page, log {log}", flush=True)
        return measure(port, cookie, key, requests, only)
    finally:
        stop_server(server)


def run(
    size: Size,
    requests: int = 30,
    reload: bool = False,
    skip_retention: bool = False,
    skip_pages: bool = False,
    only: str = "",
) -> dict[str, Any]:

    load_before = os.getloadavg()
    where = prepare_database(DB_NAME, check=require_bench_database)
    data = None if reload else loaded(size)
    loaded_now = data is None
    if data is None:
        print(f"loading {size} ...", flush=True)
        data = load(size)
    else:
        print(f"dataset of this size already loaded ({data['total_s']} s then); --reload to load again", flush=True)
    carried: dict[str, Any] = {}
    if skip_pages and (pages := earlier(size, "measured")):
        measured, carried["measured"] = pages["measured"], pages["carried_from"]
    else:
        measured = serve_and_measure(requests, only) if not skip_pages else {}
    try:
        swept = retention() if not skip_retention else None
    finally:
        stop_embedded_db_if_ours()
    if swept is None:
        swept = {"measured": False, "reason": "--no-retention"}
        if found := earlier(size, "retention"):
            swept, carried["retention"] = found["retention"], found["carried_from"]
    targets = {
        f"{name} p95 < {TARGET_MS:.0f} ms": n["p95_ms"] < TARGET_MS and {int(s) for s in n["statuses"]} == {200}
        for name, n in measured.items()
    }
    result = {
        "benchmark": "scale",
        "size": asdict(size),
        "data": data,
        "loaded_now": loaded_now,
        "config": {"requests": requests, "warmup_requests": WARMUP_REQUESTS, "settings": SETTINGS, "clients": 1},
        "measured": measured,
        "retention": swept,
        "carried_from": carried,
        "targets": targets,
        "machine": machine(where, load_before, gunicorn=package_version("gunicorn")),
    }
    return publish("scale", result, report(result))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench scale", description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=10_000_000, help="contract checks (10 000 000)")
    parser.add_argument("--sessions", type=int, default=1_000_000, help="sessions, 5-21 messages each (1 000 000)")
    parser.add_argument("--tool-calls", type=int, default=1_000_000, help="gateway calls (1 000 000)")
    parser.add_argument("--days", type=int, default=180, help="days the rows spread over (180)")
    parser.add_argument("--requests", type=int, default=30, help="timed requests per page (30)")
    parser.add_argument("--reload", action="store_true", help="load again even when this size is loaded")
    parser.add_argument("--no-retention", action="store_true", help="skip the retention run (keep the last one's)")
    parser.add_argument("--no-pages", action="store_true", help="skip the pages (keep the last figures)")
    parser.add_argument(
        "--only", default="", help="measure only the pages whose name contains one of these (comma-separated)"
    )
    args = parser.parse_args(argv)
    size = Size(args.checks, args.sessions, args.tool_calls, args.days)
    return until_interrupted(
        lambda: run(
            size,
            args.requests,
            reload=args.reload,
            skip_retention=args.no_retention,
            skip_pages=args.no_pages,
            only=args.only,
        )
    )


if __name__ == "__main__":
    sys.exit(main())
