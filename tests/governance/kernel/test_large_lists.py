"""Lists over tables that grow without bound (checks, sessions, messages, gateway and tool calls):
a page never counts the whole list nor reads every row for its filters (bench/scale.py measured
seconds per admin page at ten million checks), and filtering still finds the right rows."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from agents.models import ToolCall
from gateway.models import GatewayCall
from governance.kernel.models import AuditEvent
from governance.kernel.pagination import EXACT_UP_TO, EstimatedCountPaginator
from sessions.models import SessionMessage
from tests.factories.agents import AgentFactory
from tests.factories.gateway import GatewayCallFactory
from tests.factories.governance import ContractCheckFactory, ContractFactory
from tests.factories.sessions import AISessionFactory


def _audit_rows(n: int) -> None:
    AuditEvent.objects.bulk_create(
        AuditEvent(actor="system", action="bench", target_type="t", target_id=str(i)) for i in range(n)
    )


def _unbounded_counts(queries: list[dict]) -> list[str]:
    """COUNT statements without a LIMIT inside: the ones that read the whole list."""
    return [q["sql"] for q in queries if "COUNT(" in q["sql"].upper() and "LIMIT" not in q["sql"].upper()]


@pytest.mark.django_db
def test_a_short_list_is_counted_exactly():
    _audit_rows(7)
    paginator = EstimatedCountPaginator(AuditEvent.objects.filter(action="bench"), 5)
    assert paginator.count == 7
    assert paginator.num_pages == 2


@pytest.mark.django_db
def test_a_long_list_is_numbered_from_the_estimate_without_counting_it_all():
    _audit_rows(EXACT_UP_TO + 500)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE governance_auditevent")
    paginator = EstimatedCountPaginator(AuditEvent.objects.filter(action="bench"), 100)
    with CaptureQueriesContext(connection) as queries:
        count = paginator.count
    assert count > EXACT_UP_TO  # at least what the bounded count saw, the planner's figure beyond
    assert abs(count - (EXACT_UP_TO + 500)) < (EXACT_UP_TO + 500) * 0.2
    assert not _unbounded_counts(queries.captured_queries)
    assert [q for q in queries.captured_queries if q["sql"].startswith("EXPLAIN")]
    assert len(paginator.page(2).object_list) == 100


@pytest.fixture
def big_tables(db):
    """A few rows in each unbounded table, two contracts and two refusals apart."""
    agent = AgentFactory(agent_id="agent.seo.lists")
    first, second = ContractFactory(name="first_contract"), ContractFactory(name="second_contract")
    ContractCheckFactory(contract=first, agent=agent)
    ContractCheckFactory(contract=second, agent=agent, compliant=False)
    session = AISessionFactory(agent=agent)
    SessionMessage.objects.create(session=session, seq=1, timestamp=timezone.now(), sender="USER", text_content="hi")
    GatewayCallFactory(agent=agent)
    GatewayCallFactory(agent=agent, outcome=GatewayCall.Outcome.REFUSED, refusal="RateLimited")
    GatewayCallFactory(agent=agent, outcome=GatewayCall.Outcome.REFUSED, refusal="Forbidden")
    ToolCall.objects.create(agent=agent, tool_id="http.get", called_at=timezone.now() - timedelta(days=3))
    return agent


CHANGELISTS = [
    "admin:governance_contractcheck_changelist",
    "admin:governance_contractdailystat_changelist",
    "admin:governance_contractviolationstat_changelist",
    "admin:ai_sessions_aisession_changelist",
    "admin:ai_sessions_sessionmessage_changelist",
    "admin:gateway_gatewaycall_changelist",
    "admin:agents_toolcall_changelist",
]


@pytest.mark.parametrize("name", CHANGELISTS)
def test_a_big_table_changelist_neither_counts_it_nor_reads_every_row_for_its_filters(
    client, admin_operator, big_tables, name
):
    admin_operator.is_staff = True
    admin_operator.save()
    client.force_login(admin_operator)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse(name))
    assert response.status_code == 200
    assert not _unbounded_counts(queries.captured_queries)
    distinct = [q["sql"] for q in queries.captured_queries if "DISTINCT" in q["sql"].upper()]
    big = ("contractcheck", "aisession", "sessionmessage", "gatewaycall", "toolcall", "dailystat", "violationstat")
    assert not [sql for sql in distinct if any(f'_{table}"' in sql.split("FROM", 1)[-1] for table in big)]


def test_the_filters_of_the_big_changelists_still_narrow_them(client, admin_operator, big_tables):
    admin_operator.is_staff = True
    admin_operator.save()
    client.force_login(admin_operator)
    checks = client.get(reverse("admin:governance_contractcheck_changelist"), {"contract_name": "second_contract"})
    assert checks.context["cl"].result_count == 1
    assert "first_contract" in checks.content.decode()  # offered by the filter, from the catalog
    refused = client.get(reverse("admin:gateway_gatewaycall_changelist"), {"refusal": "RateLimited"})
    assert [call.refusal for call in refused.context["cl"].result_list] == ["RateLimited"]
    today = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    recent = client.get(reverse("admin:agents_toolcall_changelist"), {"called_at__gte": today.isoformat()})
    assert recent.context["cl"].result_count == 0  # the one tool call is three days old


@pytest.mark.parametrize("name", ["sessions:session-list", "gateway:calls"])
def test_the_session_and_call_lists_do_not_count_the_whole_table(client, viewer, big_tables, name):
    client.force_login(viewer)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse(name))
    assert response.status_code == 200
    assert "agent.seo.lists" in response.content.decode()
    assert not _unbounded_counts(queries.captured_queries)
