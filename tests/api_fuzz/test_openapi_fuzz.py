"""Schemathesis over the whole OpenAPI document, in process against the WSGI app and the real test
database, once with an agent key and once with an operator (Admin) key.

Checks: no 5xx, status codes and response bodies as documented, and every 4xx/5xx is
application/problem+json. ``FUZZ_EXAMPLES`` sets the examples per operation (``make fuzz`` runs
many more than the suite's default); the module prints a summary of what it sent.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from controlplane.wsgi import application
from tests.factories.governance import UserFactory, recent_heartbeat
from tests.support.keys import issue_key
from tests.support.manifests import load

MAX_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "3"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]

schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application)

SENT: Counter = Counter()


@pytest.fixture(scope="module", autouse=True)
def _summary():
    yield
    if SENT:
        by_status = {status: n for status, n in SENT.items() if isinstance(status, int)}
        statuses = ", ".join(f"{status}: {n}" for status, n in sorted(by_status.items()))
        server_errors = sum(n for status, n in by_status.items() if status >= 500)
        print(f"\n[fuzz] {SENT['total']} requests; {server_errors} answered 5xx; by status: {statuses}")
        for operation, n in sorted((k[1], n) for k, n in SENT.items() if isinstance(k, tuple)):
            print(f"[fuzz]   5xx x{n}: {operation}")


@pytest.fixture(scope="module", autouse=True)
def _keep_the_test_transaction():
    """Django's handler closes the database connection at the end of each request, which would end
    the test's transaction; Django's own test client disconnects the same signals."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture(params=["agent", "operator"])
def bearer(request, db) -> str:
    recent_heartbeat()  # the plane is ready: readiness answers 200 here, and its 503 is tested in test_health
    if request.param == "agent":
        return issue_key(agent=load("agent.seo.vlevel"))

    return issue_key(user=UserFactory.create(username="fuzz-admin", roles=["Admin"]))


def _problem_json_on_errors(response, case) -> None:
    if response.status_code >= 400:
        headers = {name.lower(): value for name, value in response.headers.items()}
        content_type = headers.get("content-type", [""])
        content_type = content_type[0] if isinstance(content_type, list) else content_type
        assert content_type.startswith("application/problem+json"), (
            f"{case.method} {case.formatted_path}: {response.status_code} answered as {content_type!r}"
        )


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_server_error_and_as_documented(case, bearer):
    response = case.call(headers={"Authorization": f"Bearer {bearer}"})
    SENT["total"] += 1
    SENT[response.status_code] += 1
    if response.status_code >= 500:
        SENT[("5xx", f"{case.method} {case.path} {response.status_code} {response.text[:120]!r}")] += 1
    assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.status_code}"
    _problem_json_on_errors(response, case)
    case.validate_response(response, checks=CHECKS)
