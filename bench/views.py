"""The baseline views: what Django + gunicorn cost with no auth, no validation and no DB work
(``bare``), and what the rows of a job submission cost when written with raw SQL and nothing else
(``raw_create``, ``raw_replay``).

The raw-SQL views are the honest floor of ``POST /api/v1/jobs``: they cross the same middleware,
parse the same JSON body, and per create write the rows a create writes (the idempotency claim,
the job, the audit row) in one transaction; a replay reads the job its claim holds and answers it
as JSON. No key, no envelope model, no manifest checks, no ORM: any time above them is ours.
"""

from __future__ import annotations

import functools
import hashlib
import json
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

AGENT_ID = "agent.seo.vlevel"
"""The agent whose key ``bench/jobs.py`` submits with; the raw views write its jobs."""

INSERT_CLAIM = """
    INSERT INTO agents_idempotencykey (agent_id, key, job_id, expires_at) VALUES (%s, %s, %s, %s)
    ON CONFLICT (agent_id, key) DO UPDATE SET job_id = EXCLUDED.job_id, expires_at = EXCLUDED.expires_at
        WHERE agents_idempotencykey.expires_at <= %s
    RETURNING id
"""
INSERT_JOB = """
    INSERT INTO agents_job (job_id, trace_id, parent_id, agent_id, manifest_id, intent, scope, payload, constraints,
        context, priority, idempotency_key, created_at, expires_at, status, started_at, finished_at, lease_owner,
        lease_expires_at, attempts, next_attempt_at, current_node, visited_nodes, retry_count, intermediate, budget,
        errors, rag_context, output, pre_conditions, post_conditions)
    VALUES (%s, %s, NULL, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, NULL, 'queued', NULL, NULL, '', NULL, 0, NULL,
        'start', '[]', 0, '{}', %s, '[]', NULL, NULL, %s, '[]')
"""
INSERT_AUDIT = """
    INSERT INTO governance_auditevent (at, actor, action, target_type, target_id, data)
    VALUES (%s, %s, 'job.submitted', 'agents.job', %s, %s)
"""
SELECT_REPLAY = """
    SELECT j.* FROM agents_idempotencykey k JOIN agents_job j ON j.job_id = k.job_id
    WHERE k.agent_id = %s AND k.key = %s AND k.expires_at > %s
"""


def bare(request: HttpRequest) -> JsonResponse:
    """Answer a constant, so any time above this is ours (auth, envelope, SQL), not the stack's."""
    return JsonResponse({"ok": True})


@functools.cache
def _agent() -> tuple[int, int]:
    """(agent pk, active manifest pk) of the bench agent, read once per worker: the raw views
    stand for the writes, not for finding out who writes."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, active_manifest_id FROM agents_agent WHERE agent_id = %s", [AGENT_ID])
        return cursor.fetchone()


def _key(body: bytes) -> str:
    """A key computed from the content, as the server's default strategy does."""
    return "idem_" + hashlib.sha256(body).hexdigest()


@csrf_exempt
def raw_create(request: HttpRequest) -> JsonResponse:
    """The rows of one job submission in one transaction: claim, job, audit row. 201 with the
    job's id and key; 409 when the key is already held (the bench sends each body once)."""
    envelope: dict[str, Any] = json.loads(request.body)
    agent_pk, manifest_pk = _agent()
    key, job_id, now = _key(request.body), uuid.uuid4(), timezone.now()
    constraints = {"maxTokens": 4000, "maxDocs": 10, "timeout": 300000, "budget": None, "dryRun": False}
    budget = {"tokensUsed": 0, "tokensRemaining": 4000, "docsRetrieved": 0, "apiCalls": 0}
    pre = [{"expression": "urls.length > 0", "error_code": "INVALID_URL_COUNT", "passed": True, "error": None}]
    with transaction.atomic(), connection.cursor() as cursor:
        expires = now + timedelta(seconds=settings.JOB_RESULT_TTL_SECONDS)
        cursor.execute(INSERT_CLAIM, [agent_pk, key, job_id, expires, now])
        if cursor.fetchone() is None:
            return JsonResponse({"detail": "key held"}, status=409)
        cursor.execute(
            INSERT_JOB,
            [
                job_id,
                uuid.uuid4(),
                agent_pk,
                manifest_pk,
                envelope["intent"],
                json.dumps(envelope["scope"]),
                json.dumps(envelope["payload"]),
                json.dumps(constraints),
                json.dumps(envelope["context"]),
                "normal",
                key,
                now,
                json.dumps(budget),
                json.dumps(pre),
            ],
        )
        audit = json.dumps({"intent": envelope["intent"], "key": key})
        cursor.execute(INSERT_AUDIT, [now, f"agent:{AGENT_ID}", str(job_id), audit])
    return JsonResponse({"jobId": job_id, "idempotencyKey": key, "status": "queued"}, status=201)


@csrf_exempt
def raw_replay(request: HttpRequest) -> JsonResponse:
    """The job a live claim on the body's key holds, every column as JSON; 404 when none."""
    json.loads(request.body)  # the envelope is parsed, as the API does, before the key is looked up
    agent_pk, _ = _agent()
    with connection.cursor() as cursor:
        cursor.execute(SELECT_REPLAY, [agent_pk, _key(request.body), timezone.now()])
        row = cursor.fetchone()
        if row is None:
            return JsonResponse({"detail": "no live claim"}, status=404)
        columns = [column.name for column in cursor.description]
    return JsonResponse(dict(zip(columns, row, strict=True)), status=200, headers={"Idempotent-Replayed": "true"})
