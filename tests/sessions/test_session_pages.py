"""Session pages: the filtered list, a session's thread (each sender styled, system messages
folded, withdrawn fallbacks hidden), its timeline, STOP for those allowed, and the admin."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from sessions import scheduler
from sessions.models import AISession, Automation, PromptChunk, SessionMessage
from tests.factories.agents import AgentFactory
from tests.factories.sessions import AISessionFactory, AutomationFactory
from tests.governance.reviews.test_inbox import HTMX, as_user, decide, send, start_chat, waiting_for_validation
from tests.sessions.test_session_flow import ai


def detail(client: Client, session_id: str) -> str:
    response = client.get(reverse("sessions:session-detail", args=[session_id]))
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def chat(vlevel_api) -> str:
    """A CHAT with a user message, a data query answered on the server, and a plain answer."""
    session_id = start_chat(vlevel_api, "Audit help")
    send(vlevel_api, session_id, {"type": "UserMessageSent", "payload": {"text": "How are my audits doing?"}})
    send(vlevel_api, session_id, ai(preText="Let me look at your jobs.", dataCommands=[{"type": "JOBS", "params": {}}]))
    send(vlevel_api, session_id, ai(preText="You have no jobs yet."))
    return session_id


@pytest.fixture
def sessions_of_every_kind(db) -> dict[str, AISession]:
    """Rows as the scheduler leaves them, one agent each (one active session per agent)."""
    make = AISession.objects.create
    return {
        "chat": make(
            agent=AgentFactory(agent_id="agent.test.chat"),
            name="Live chat",
            type="CHAT",
            phase="WAITING_VALIDATION",
            is_active=True,
            total_roundtrips=3,
            last_event_time=timezone.now(),
        ),
        "done": make(
            agent=AgentFactory(agent_id="agent.test.done"),
            name="Nightly audit",
            type="AUTOMATION",
            phase="COMPLETED",
            is_active=False,
            end_reason="LIMIT_REACHED",
            total_roundtrips=20,
        ),
        "seed": make(agent=AgentFactory(agent_id="agent.test.seed"), name="Audit template", type="SEED"),
    }


# Access ------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_session_pages_send_anonymous_visitors_to_log_in(client, chat):
    for url in (reverse("sessions:session-list"), reverse("sessions:session-detail", args=[chat])):
        response = Client().get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


@pytest.mark.django_db
def test_an_account_without_a_role_is_refused(outsider, chat):
    client = as_user(Client(), outsider)
    assert client.get(reverse("sessions:session-list")).status_code == 403
    assert client.get(reverse("sessions:session-detail", args=[chat])).status_code == 403
    assert client.post(reverse("sessions:session-stop", args=[chat])).status_code == 403
    assert AISession.objects.get(pk=chat).is_active


@pytest.mark.django_db
def test_an_unknown_session_is_404(client, viewer):
    assert as_user(client, viewer).get("/sessions/00000000-0000-0000-0000-000000000000/").status_code == 404


# The list ----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_list_shows_agent_name_type_phase_activity_end_reason_and_round_trips(
    client, viewer, sessions_of_every_kind
):
    html = as_user(client, viewer).get(reverse("sessions:session-list")).content.decode()

    done = sessions_of_every_kind["done"]
    assert f'<a href="{reverse("sessions:session-detail", args=[done.pk])}">Nightly audit</a>' in html
    assert "<code>agent.test.done</code>" in html
    assert "LIMIT_REACHED" in html
    assert '<td class="num">20</td>' in html
    assert "WAITING_VALIDATION" in html
    assert 'hx-target="#session-rows"' in html


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "shown"),
    [
        ({"type": "AUTOMATION"}, ["Nightly audit"]),
        ({"phase": "WAITING_VALIDATION"}, ["Live chat"]),
        ({"active": "yes"}, ["Live chat"]),
        ({"active": "no"}, ["Nightly audit", "Audit template"]),
        ({"type": "CHAT", "active": "no"}, []),
        ({"type": "bogus"}, ["Live chat", "Nightly audit", "Audit template"]),
    ],
)
def test_filters_narrow_the_list(client, viewer, sessions_of_every_kind, params, shown):
    html = as_user(client, viewer).get(reverse("sessions:session-list"), params, **HTMX).content.decode()

    assert "<html" not in html
    for name in ["Live chat", "Nightly audit", "Audit template"]:
        assert (f">{name}</a>" in html) == (name in shown), name
    if not shown:
        assert "No sessions match these filters." in html


@pytest.mark.django_db
def test_the_list_costs_the_same_queries_for_many_sessions(
    client, viewer, sessions_of_every_kind, django_assert_max_num_queries
):
    as_user(client, viewer).get(reverse("sessions:session-list"))
    with django_assert_max_num_queries(10) as captured:
        client.get(reverse("sessions:session-list"))
    few = len(captured)
    for n in range(30):
        AISessionFactory(agent=AgentFactory(), name=f"extra {n}")
    with django_assert_max_num_queries(few):
        assert client.get(reverse("sessions:session-list")).content.decode().count("extra ") == 30


# The thread --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_each_sender_is_styled_differently(client, viewer, chat):
    html = detail(as_user(client, viewer), chat)

    assert html.count('class="message message-user') == 1
    assert html.count('class="message message-ai') == 2
    assert html.count('class="message message-system') == 1
    assert "How are my audits doing?" in html


@pytest.mark.django_db
def test_a_user_message_is_escaped_once(client, viewer, vlevel_api):
    session_id = start_chat(vlevel_api, "Menu")
    send(vlevel_api, session_id, {"type": "UserMessageSent", "payload": {"text": "Fish & chips <b>now</b>"}})

    html = detail(as_user(client, viewer), session_id)

    assert "Fish &amp; chips &lt;b&gt;now&lt;/b&gt;" in html
    assert "&amp;amp;" not in html


@pytest.mark.django_db
def test_an_ai_message_shows_its_text_and_the_raw_json_folded(client, viewer, chat):
    html = detail(as_user(client, viewer), chat)

    assert "Let me look at your jobs." in html
    assert "<summary>Raw JSON from the model</summary>" in html
    raw = SessionMessage.objects.filter(session_id=chat, sender="AI").order_by("seq").first().ai_message_json
    assert json.loads(raw)["preText"] == "Let me look at your jobs."
    assert "&quot;preText&quot;: &quot;Let me look at your jobs.&quot;" in html
    assert '<span class="tag">data <code>JOBS</code></span>' in html


@pytest.mark.django_db
def test_a_system_message_is_folded_under_its_summary(client, viewer, chat):
    message = SessionMessage.objects.get(session_id=chat, sender="SYSTEM")
    html = detail(as_user(client, viewer), chat)

    assert '<details class="system-message">' in html
    assert f"<summary>DATA_ADDED: {message.system_message['summary']}</summary>" in html
    assert "### " in message.system_message["formattedData"]
    assert '<pre class="document">### ' in html


@pytest.mark.django_db
def test_a_fallback_shows_while_waiting_and_is_hidden_once_withdrawn(client, reviewer, vlevel_api):
    session_id, item = waiting_for_validation(vlevel_api)
    as_user(client, reviewer)
    waiting = detail(client, session_id)
    assert "VALIDATION_CANCELLED" in waiting
    assert "stays if the request is never answered" in waiting

    decide(client, item, decision="approve")

    assert SessionMessage.objects.filter(session_id=session_id, removed_at__isnull=False).count() == 1
    approved = detail(client, session_id)
    assert "VALIDATION_CANCELLED" not in approved
    assert "EXECUTING_ACTIONS" in approved


@pytest.mark.django_db
def test_a_message_kept_out_of_the_prompt_is_marked(client, viewer, vlevel_api):
    session_id = start_chat(vlevel_api, "Hello")
    send(vlevel_api, session_id, {"type": "UserMessageSent", "payload": {"text": "hi"}})
    send(
        vlevel_api,
        session_id,
        ai(preText="Hi!", communicationModule={"type": "Validation", "data": {"message": "Go?"}}),
    )

    html = detail(as_user(client, viewer), session_id)

    assert "message-ai not-in-prompt fallback" in html
    assert '<span class="tag">not sent to the model</span>' in html


@pytest.mark.django_db
def test_the_timeline_lists_messages_reviews_and_where_the_session_is_now(client, reviewer, vlevel_api):
    session_id, item = waiting_for_validation(vlevel_api)
    decide(as_user(client, reviewer), item, decision="reject")

    html = detail(client, session_id)

    timeline = html[html.index('<ol class="timeline">') :]
    labels = ["User message", "AI answered", f"Review #{item.pk} opened", f"Review #{item.pk} rejected"]
    positions = [timeline.index(label) for label in labels]
    assert positions == sorted(positions)
    assert "by rita" in timeline
    assert "Now: IDLE" in timeline
    assert "System: ACTIONS_EXECUTED" in timeline  # the note that the actions were refused


@pytest.mark.django_db
def test_the_state_card_shows_what_the_session_waits_for(client, viewer, vlevel_api):
    session_id, item = waiting_for_validation(vlevel_api)
    html = detail(as_user(client, viewer), session_id)

    assert f'<a href="{reverse("reviews:inbox")}#review-item-{item.pk}">review #{item.pk}</a>' in html
    assert "<summary>Waiting context</summary>" in html


@pytest.mark.django_db
def test_the_detail_page_query_count_does_not_grow_with_the_thread(
    client, viewer, vlevel_api, django_assert_max_num_queries
):
    session_id = start_chat(vlevel_api, "Long chat")
    send(vlevel_api, session_id, {"type": "UserMessageSent", "payload": {"text": "hi"}})
    send(vlevel_api, session_id, ai(preText="Hello"))
    as_user(client, viewer)
    with django_assert_max_num_queries(20) as captured:
        detail(client, session_id)
    few = len(captured)
    for n in range(15):
        send(vlevel_api, session_id, {"type": "UserMessageSent", "payload": {"text": f"again {n}"}})
        send(vlevel_api, session_id, ai(preText=f"answer {n}"))
    with django_assert_max_num_queries(few):
        assert detail(client, session_id).count("message message-ai") == 16


# STOP --------------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(("who", "has_button"), [("admin_operator", True), ("reviewer", False), ("viewer", False)])
def test_only_operators_who_may_change_sessions_get_a_stop_button(client, chat, who, has_button, request):
    html = detail(as_user(client, request.getfixturevalue(who)), chat)
    assert (f'hx-post="{reverse("sessions:session-stop", args=[chat])}"' in html) is has_button


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["reviewer", "viewer"])
def test_stopping_needs_the_change_permission(client, chat, who, request):
    response = as_user(client, request.getfixturevalue(who)).post(reverse("sessions:session-stop", args=[chat]), **HTMX)

    assert response.status_code == 403
    assert AISession.objects.get(pk=chat).is_active


@pytest.mark.django_db
def test_stop_ends_the_session_cancelled_and_swaps_the_state_card(client, admin_operator, chat):
    response = as_user(client, admin_operator).post(reverse("sessions:session-stop", args=[chat]), **HTMX)

    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section class="card section session-state" id="session-state"')
    assert "Stopped: the session ended as cancelled." in html
    assert "CANCELLED" in html
    assert "Stop session" not in html
    session = AISession.objects.get(pk=chat)
    assert (session.phase, session.end_reason, session.is_active) == ("COMPLETED", "CANCELLED", False)


@pytest.mark.django_db
def test_stop_without_htmx_comes_back_to_the_page(client, admin_operator, chat):
    response = as_user(client, admin_operator).post(reverse("sessions:session-stop", args=[chat]), follow=True)

    assert response.redirect_chain[-1][0] == reverse("sessions:session-detail", args=[chat])
    assert "Stopped: the session ended as cancelled." in response.content.decode()


@pytest.mark.django_db
def test_stopping_an_ended_session_says_so(client, admin_operator, chat):
    scheduler.stop(AISession.objects.get(pk=chat), actor=SYSTEM)

    response = as_user(client, admin_operator).post(reverse("sessions:session-stop", args=[chat]), **HTMX)

    assert response.status_code == 200
    assert "Not stopped:" in response.content.decode()


@pytest.mark.django_db
def test_stop_needs_a_post_and_the_csrf_token(admin_operator, chat):
    browser = as_user(Client(enforce_csrf_checks=True), admin_operator)
    assert browser.get(reverse("sessions:session-stop", args=[chat])).status_code == 405
    assert browser.post(reverse("sessions:session-stop", args=[chat]), **HTMX).status_code == 403
    assert AISession.objects.get(pk=chat).is_active


# Admin -------------------------------------------------------------------------------------------


@pytest.fixture
def automation(vlevel) -> Automation:
    seed = scheduler.create_seed(vlevel, name="Nightly", messages=[{"text": "audit"}], now=timezone.now())
    return AutomationFactory.create(agent=vlevel, name="Nightly", seed_session=seed, created_by="user:alice")


@pytest.mark.django_db
def test_the_session_admin_lists_and_filters_but_never_changes(admin_client, chat):
    changelist = admin_client.get(reverse("admin:ai_sessions_aisession_changelist"), {"type__exact": "CHAT"})
    html = changelist.content.decode()
    assert changelist.status_code == 200
    assert "Audit help" in html
    assert (
        "How are my audits doing?"
        in admin_client.get(reverse("admin:ai_sessions_aisession_change", args=[chat])).content.decode()
    )
    assert admin_client.get(reverse("admin:ai_sessions_aisession_add")).status_code == 403
    assert admin_client.get(reverse("admin:ai_sessions_aisession_delete", args=[chat])).status_code == 403
    message = SessionMessage.objects.filter(session_id=chat).first()
    assert admin_client.get(reverse("admin:ai_sessions_sessionmessage_delete", args=[message.pk])).status_code == 403
    admin_client.post(reverse("admin:ai_sessions_aisession_change", args=[chat]), {"name": "renamed"})
    assert AISession.objects.get(pk=chat).name == "Audit help"


@pytest.mark.django_db
def test_an_automation_schedule_is_edited_in_the_admin_and_audited(admin_client, automation):
    url = reverse("admin:ai_sessions_automation_change", args=[automation.pk])
    response = admin_client.post(
        url, {"enabled": "on", "trigger": "SCHEDULED", "interval_minutes": "30", "name": "renamed"}
    )

    assert response.status_code == 302
    automation.refresh_from_db()
    assert (automation.trigger, automation.interval_minutes, automation.name) == ("SCHEDULED", 30, "Nightly")
    assert automation.next_run_at is not None
    event = AuditEvent.objects.get(action="automation.changed")
    assert event.target_id == str(automation.pk)
    assert admin_client.get(reverse("admin:ai_sessions_automation_add")).status_code == 403
    assert admin_client.get(reverse("admin:ai_sessions_automation_delete", args=[automation.pk])).status_code == 403


@pytest.mark.django_db
def test_a_scheduled_automation_needs_an_interval_or_a_cron(admin_client, automation):
    url = reverse("admin:ai_sessions_automation_change", args=[automation.pk])
    response = admin_client.post(url, {"enabled": "on", "trigger": "SCHEDULED", "interval_minutes": ""})

    assert response.status_code == 200
    assert "A SCHEDULED automation needs an interval or a cron expression." in response.content.decode()


@pytest.mark.django_db
def test_prompt_chunks_are_edited_in_the_admin_but_not_deleted(admin_client):
    response = admin_client.post(
        reverse("admin:ai_sessions_promptchunk_add"),
        {
            "key": "tone",
            "title": "Tone",
            "body": "Be brief.",
            "importance": "60",
            "session_types": "[]",
            "enabled": "on",
        },
    )

    assert response.status_code == 302
    chunk = PromptChunk.objects.get(key="tone")
    assert AuditEvent.objects.filter(action="prompt_chunk.added", target_id=str(chunk.pk)).exists()
    assert admin_client.get(reverse("admin:ai_sessions_promptchunk_delete", args=[chunk.pk])).status_code == 403
