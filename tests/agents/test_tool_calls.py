"""POST /api/v1/agents/{agent_id}/tools/{tool_id}/calls: permission and rate limit per tool."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import ToolCall

SQL = "/agents/agent.seo.vlevel/tools/mcp__supabase__execute_sql/calls"
SNAPSHOT = "/agents/agent.seo.vlevel/tools/mcp__chrome-devtools__take_snapshot/calls"


@pytest.mark.django_db
def test_a_call_is_recorded_with_the_tool_policy(vlevel_api):
    response = vlevel_api.post(SQL, {"permission": "read"})

    assert response.status_code == 201
    body = response.json()
    assert body["requires_approval"] is False
    assert body["rate_limit"] == 100
    assert body["remaining"] == 99
    assert body["grantId"] is None
    assert ToolCall.objects.get().tool_id == "mcp__supabase__execute_sql"


@pytest.mark.django_db
def test_a_write_tool_may_be_called_to_read_but_a_read_tool_never_to_write(vlevel_api):
    assert vlevel_api.post(SQL, {"permission": "execute"}).status_code == 403
    assert vlevel_api.post(SQL, {"permission": "read"}).status_code == 201


@pytest.mark.django_db
def test_a_tool_missing_from_the_manifest_is_403(vlevel_api):
    response = vlevel_api.post("/agents/agent.seo.vlevel/tools/mcp__shell__exec/calls", {})
    assert response.status_code == 403
    assert not ToolCall.objects.exists()


@pytest.mark.django_db
def test_a_permission_the_tool_lacks_is_403(vlevel_api):
    response = vlevel_api.post(SQL, {"permission": "write"})
    assert response.status_code == 403
    assert response.json()["granted"] == "read"


@pytest.mark.django_db
def test_over_the_limit_is_429_with_retry_after(vlevel_api):
    for _ in range(100):
        assert vlevel_api.post(SQL, {}).status_code == 201

    refused = vlevel_api.post(SQL, {})

    assert refused.status_code == 429
    assert refused["Content-Type"] == "application/problem+json"
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert ToolCall.objects.count() == 100
    assert vlevel_api.post(SNAPSHOT, {}).status_code == 202  # limits are per tool


@pytest.mark.django_db
def test_the_window_slides(vlevel_api):
    for _ in range(100):
        vlevel_api.post(SQL, {})
    oldest = ToolCall.objects.order_by("called_at").first()
    ToolCall.objects.filter(pk=oldest.pk).update(called_at=timezone.now() - timedelta(seconds=61))

    assert vlevel_api.post(SQL, {}).status_code == 201
    assert vlevel_api.post(SQL, {}).status_code == 429


@pytest.mark.django_db
def test_only_the_agent_itself_records_its_calls(other_agent_api, admin_api, vlevel):
    assert other_agent_api.post(SQL, {}).status_code == 403
    assert admin_api.post(SQL, {}).status_code == 403


@pytest.mark.django_db
def test_a_call_can_name_its_job_but_only_its_own(vlevel_api):
    from tests.agents.test_jobs import envelope

    job = vlevel_api.post("/jobs", envelope()).json()
    assert vlevel_api.post(SQL, {"jobId": job["jobId"]}).status_code == 201
    assert str(ToolCall.objects.get().job_id) == job["jobId"]
    missing = vlevel_api.post(SQL, {"jobId": "3f1c4a52-6a1e-4b61-9d0e-0f2b1f7d9a11"})
    assert missing.status_code == 422
