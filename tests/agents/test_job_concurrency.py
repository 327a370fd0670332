"""Real concurrent clients against the real web stack (several processes): the database, not luck,
keeps the promises."""

from __future__ import annotations

import json
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from agents.models import IdempotencyKey, Job, ToolCall
from governance.kernel.principals import SYSTEM
from governance.kernel.services import issue_api_key
from tests.support.manifests import manifest_text

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

BODY = {
    "intent": "seo_audit",
    "scope": {"entityType": "page"},
    "payload": {"urls": ["https://example.com/a"]},
    "context": {"source": "webhook"},
}


def _post(url: str, key: str, body: dict | None = None) -> tuple[int, dict, dict]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body or {}).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read())


def _all_at_once(calls: int, call) -> list:
    """Start `calls` requests together (a barrier), so they really overlap."""
    barrier = threading.Barrier(calls)

    def one(_: int):
        barrier.wait()
        return call()

    with ThreadPoolExecutor(max_workers=calls) as pool:
        return list(pool.map(one, range(calls)))


def test_fifty_simultaneous_identical_submissions_create_exactly_one_job(served, vlevel):
    _, key = issue_api_key(actor=SYSTEM, name="concurrency", agent=vlevel)

    results = _all_at_once(50, lambda: _post(f"{served}/api/v1/jobs", key, BODY))

    statuses = sorted(status for status, _, _ in results)
    assert statuses == [200] * 49 + [201]
    assert {body["jobId"] for _, _, body in results} == {str(Job.objects.get().pk)}
    assert sum(headers.get("Idempotent-Replayed") == "true" for _, headers, _ in results) == 49
    assert IdempotencyKey.objects.count() == 1


def test_concurrent_tool_calls_never_exceed_the_rate_limit(served, vlevel):
    _, key = issue_api_key(actor=SYSTEM, name="concurrency", agent=vlevel)
    url = f"{served}/api/v1/agents/agent.seo.vlevel/tools/mcp__supabase__execute_sql/calls"

    results = _all_at_once(110, lambda: _post(url, key))  # the manifest allows 100 per minute

    statuses = [status for status, _, _ in results]
    assert statuses.count(201) == 100
    assert statuses.count(429) == 10
    assert ToolCall.objects.count() == 100
    assert all(int(headers["Retry-After"]) >= 1 for status, headers, _ in results if status == 429)


def test_concurrent_asks_for_one_gated_call_open_one_review_item(served, vlevel):
    from governance.reviews.models import ReviewItem

    _, key = issue_api_key(actor=SYSTEM, name="concurrency", agent=vlevel)
    url = f"{served}/api/v1/agents/agent.seo.vlevel/tools/mcp__chrome-devtools__take_snapshot/calls"

    results = _all_at_once(20, lambda: _post(url, key, {"arguments": {"url": "https://shop.example.com/"}}))

    assert {status for status, _, _ in results} == {202}
    assert len({body["reviewItemId"] for _, _, body in results}) == 1
    assert ReviewItem.objects.filter(kind="tool_approval").count() == 1
    assert not ToolCall.objects.exists()


def test_two_workers_racing_for_a_lease_get_one_winner(served, vlevel):
    _, key = issue_api_key(actor=SYSTEM, name="concurrency", agent=vlevel)
    status, _, job = _post(f"{served}/api/v1/jobs", key, BODY)
    assert status == 201
    lease_url = f"{served}/api/v1/jobs/{job['jobId']}/lease"
    owners = iter(f"worker-{n}" for n in range(10))
    lock = threading.Lock()

    def claim():
        with lock:
            owner = next(owners)
        return _post(lease_url, key, {"owner": owner})

    results = _all_at_once(10, claim)

    assert sorted(status for status, _, _ in results) == [200] + [409] * 9
    winner = next(body for status, _, body in results if status == 200)
    assert Job.objects.get().lease_owner == winner["lease"]["owner"]
    assert Job.objects.get().attempts == 1


def test_simultaneous_automations_stop_exactly_at_the_agents_quota(served, vlevel):
    from agents.manifest import read_text
    from agents.registry import load_manifest
    from sessions.models import Automation

    document = read_text(manifest_text("agent.seo.vlevel"))
    load_manifest({**document, "version": "1.1.0", "quotas": {"automations": 3}}, actor=SYSTEM)
    _, key = issue_api_key(actor=SYSTEM, name="concurrency", agent=vlevel)
    body = {"name": "loop", "trigger": "MANUAL", "messages": [{"text": "again"}]}

    results = _all_at_once(12, lambda: _post(f"{served}/api/v1/automations", key, body))

    statuses = sorted(status for status, _, _ in results)
    assert statuses == [201] * 3 + [429] * 9
    assert Automation.objects.filter(agent=vlevel).count() == 3
