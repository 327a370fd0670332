"""Numbers and times an agent sends are bounded: a duration or a count past its documented maximum,
or a time PostgreSQL cannot store, is a 422 naming the field, and nothing is written.

The hostile (or buggy) agent of finding 1 sent `constraints.timeout: 10**15`: the job's deadline
overflowed Python's datetime, every later write to the job was a 500, and the job sweeper died on
it every minute for the whole fleet."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from agents.envelope import MAX_BUDGET_DOLLARS, MAX_TIMEOUT_MS
from agents.registry import load_manifest
from governance.kernel.bounds import MAX_COUNT
from governance.kernel.principals import SYSTEM
from tests.agents.test_manifest_types import typed_document
from tests.support.api import Api
from tests.support.keys import issue_key
from tests.support.refusals import nothing_written
from tests.support.world import World

ENVELOPE = {
    "intent": "seo_audit",
    "scope": {"entityType": "page"},
    "payload": {"urls": ["https://example.com/other"]},
    "context": {"source": "manual"},
}
BEYOND_ITS_ZONES = "2030-01-01T00:00:00+16:00"  # PostgreSQL takes offsets up to 15:59
PAST_THE_LAST_YEAR = "9999-12-31T23:00:00-10:00"  # 10000-01-01 in UTC


def job(**changes: Any) -> dict[str, Any]:
    return {**ENVELOPE, **changes}


def constraints(**changes: Any) -> dict[str, Any]:
    return job(constraints=changes)


@dataclass(frozen=True)
class Attempt:
    """One out-of-range value: where it is sent, and the loc the 422 must name."""

    name: str
    path: Callable[[World], str]
    body: dict[str, Any]
    loc: list[Any]


def on_job(suffix: str) -> Callable[[World], str]:
    return lambda world: f"/jobs/{world.job_id}/{suffix}"


def fixed(path: str) -> Callable[[World], str]:
    return lambda world: path


ATTEMPTS = [
    Attempt("timeout of 10**15 ms", fixed("/jobs"), constraints(timeout=10**15), ["body", "constraints", "timeout"]),
    Attempt(
        "timeout past the maximum",
        fixed("/jobs"),
        constraints(timeout=MAX_TIMEOUT_MS + 1),
        ["body", "constraints", "timeout"],
    ),
    Attempt(
        "timeout past the validation",
        fixed("/jobs/validate"),
        constraints(timeout=10**20),
        ["body", "constraints", "timeout"],
    ),
    Attempt("maxTokens", fixed("/jobs"), constraints(maxTokens=MAX_COUNT + 1), ["body", "constraints", "maxTokens"]),
    Attempt("maxDocs", fixed("/jobs"), constraints(maxDocs=MAX_COUNT + 1), ["body", "constraints", "maxDocs"]),
    Attempt("budget", fixed("/jobs"), constraints(budget=MAX_BUDGET_DOLLARS * 10.0), ["body", "constraints", "budget"]),
    Attempt("expiresAt past +15:59", fixed("/jobs"), job(expiresAt=BEYOND_ITS_ZONES), ["body", "expiresAt"]),
    Attempt("expiresAt past year 9999", fixed("/jobs"), job(expiresAt=PAST_THE_LAST_YEAR), ["body", "expiresAt"]),
    Attempt("retryCount of 2**31", on_job("state"), {"retryCount": 2**31}, ["body", "retryCount"]),
    Attempt("retryCount past the maximum", on_job("state"), {"retryCount": MAX_COUNT + 1}, ["body", "retryCount"]),
    Attempt(
        "tokensUsed",
        on_job("state"),
        {"budget": {"tokensUsed": MAX_COUNT + 1}},
        ["body", "budget", "tokensUsed"],
    ),
    Attempt(
        "docsRetrieved",
        on_job("state"),
        {"budget": {"docsRetrieved": MAX_COUNT + 1}},
        ["body", "budget", "docsRetrieved"],
    ),
    Attempt("apiCalls", on_job("state"), {"budget": {"apiCalls": 2**63}}, ["body", "budget", "apiCalls"]),
    Attempt("costUsed", on_job("state"), {"budget": {"costUsed": 1e300}}, ["body", "budget", "costUsed"]),
    Attempt(
        "an error's timestamp",
        on_job("state"),
        {"errors": [{"node": "n", "message": "m", "recoverable": True, "timestamp": BEYOND_ITS_ZONES}]},
        ["body", "errors", 0, "timestamp"],
    ),
    Attempt(
        "error_count",
        on_job("result"),
        {"success": False, "error_count": 2**31},
        ["body", "error_count"],
    ),
    Attempt(
        "a metric no float holds",
        on_job("result"),
        {"success": False, "metrics": {"task_success_rate": 10**400}},
        ["body", "metrics", "task_success_rate"],
    ),
    Attempt(
        "intervalMinutes",
        lambda world: f"/automations/{world.automation_id}",
        {"intervalMinutes": 2**40},
        ["body", "intervalMinutes"],
    ),
]


@pytest.mark.django_db
@pytest.mark.parametrize("attempt", ATTEMPTS, ids=[attempt.name for attempt in ATTEMPTS])
def test_a_number_or_time_out_of_range_is_422_at_its_field_and_writes_nothing(world, attempt):
    path = attempt.path(world)
    method = "patch" if path.startswith("/automations/") else "post"

    with nothing_written():
        response = world.owner.send(method, path, attempt.body)

    assert response.status_code == 422, response.content
    assert attempt.loc in [error["loc"] for error in response.json()["errors"]]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("event", "payload", "loc"),
    [
        ("AIResponseReceived", {"content": "{}", "tokens": {"input": 10**30}}, ["body", "payload", "tokens", "input"]),
        ("NetworkErrorOccurred", {"retryAfter": 10**20}, ["body", "payload", "retryAfter"]),
    ],
)
def test_a_session_event_with_a_count_out_of_range_is_422_at_its_field(world, event, payload, loc):
    path = f"/sessions/{world.session_id}/events"
    assert world.owner.post(path, {"type": "UserMessageSent", "payload": {"text": "hi"}}).status_code == 200

    with nothing_written():
        response = world.owner.post(path, {"type": event, "payload": payload})

    assert response.status_code == 422, response.content
    assert loc in [error["loc"] for error in response.json()["errors"]]


@pytest.mark.django_db
def test_the_maxima_themselves_are_accepted(world):
    at_most = constraints(timeout=MAX_TIMEOUT_MS, maxTokens=MAX_COUNT, maxDocs=MAX_COUNT, budget=MAX_BUDGET_DOLLARS)
    created = world.owner.post("/jobs", {**at_most, "expiresAt": "2030-01-01T00:00:00+15:59"})
    assert created.status_code == 201, created.content

    state = world.owner.post(
        f"/jobs/{world.job_id}/state",
        {"retryCount": MAX_COUNT, "budget": {"apiCalls": MAX_COUNT, "docsRetrieved": 10}},
    )
    assert state.status_code == 200, state.content
    assert state.json()["graphState"]["retryCount"] == MAX_COUNT


@pytest.mark.django_db
def test_a_message_enrichment_over_a_period_postgresql_cannot_store_is_422(world):
    period = {"start": BEYOND_ITS_ZONES, "end": "2030-01-02T00:00:00+16:00"}
    use_jobs = {"type": "enrichment", "enrichmentType": "USE", "config": {"resource": "jobs", "period": period}}

    with nothing_written():
        response = world.owner.post(
            f"/sessions/{world.session_id}/events", {"type": "UserMessageSent", "payload": {"segments": [use_jobs]}}
        )

    assert response.status_code == 422, response.content
    assert ["body", "payload", "segments"] in [error["loc"] for error in response.json()["errors"]]


@pytest.mark.django_db
def test_a_payload_number_no_double_holds_is_422_at_its_path(client):
    typed = load_manifest(typed_document(), actor=SYSTEM)[0].agent  # options.depth: z.number().int().min(1).max(5)
    body = job(payload={"urls": ["https://example.com/a"], "options": {"depth": 10**400}})

    with nothing_written():
        response = Api(client, issue_key(agent=typed)).post("/jobs", body)

    assert response.status_code == 422, response.content
    assert ["body", "payload", "options", "depth"] in [error["loc"] for error in response.json()["errors"]]
