"""The reviewer inbox: who sees what, deciding through the page moves the session on, a second
reviewer is told who was first, CSRF, polling, the CSV export, and flat query counts."""

from __future__ import annotations

import csv
import io
from uuid import uuid4

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agents.models import Escalation
from governance.kernel.principals import SYSTEM, Principal
from governance.reviews import services as reviews
from governance.reviews.models import ReviewDecision, ReviewItem
from sessions.models import AISession
from tests.agents.test_job_lifecycle import result
from tests.agents.test_jobs import envelope
from tests.sessions.test_session_flow import ai

HTMX = {"HTTP_HX_REQUEST": "true"}
SNAPSHOT = {"type": "mcp__chrome-devtools__take_snapshot", "params": {"url": "https://shop.example.com"}}
CHOICE = {"type": "MultipleChoice", "data": {"question": "Which page first?", "options": ["Home", "Checkout"]}}
YES_NO = {"type": "Validation", "data": {"message": "May I re-audit the whole shop?"}}


# Driving a session the way an agent does ---------------------------------------------------------


def send(api, session_id: str, body: dict) -> dict:
    response = api.post(f"/sessions/{session_id}/events", body)
    assert response.status_code == 200, response.content
    return response.json()


def start_chat(api, name: str) -> str:
    response = api.post("/sessions", {"type": "CHAT", "name": name})
    assert response.status_code == 201, response.content
    return response.json()["sessionId"]


def waiting_item(session_id: str) -> ReviewItem:
    return ReviewItem.objects.get(pk=AISession.objects.get(pk=session_id).waiting_context["reviewItemId"])


def waiting_for_validation(api, name: str = "Snapshot the shop") -> tuple[str, ReviewItem]:
    """A CHAT of the agent whose last answer wants a tool that requires approval."""
    session_id = start_chat(api, name)
    send(api, session_id, {"type": "UserMessageSent", "payload": {"text": "snapshot the home page"}})
    send(api, session_id, ai(preText="I will take a snapshot of the home page.", actionCommands=[SNAPSHOT]))
    return session_id, waiting_item(session_id)


def waiting_for_answer(api, module: dict, name: str = "Which page") -> tuple[str, ReviewItem]:
    session_id = start_chat(api, name)
    send(api, session_id, {"type": "UserMessageSent", "payload": {"text": "audit something"}})
    send(api, session_id, ai(preText="Before I start, one question.", communicationModule=module))
    return session_id, waiting_item(session_id)


def decide(client: Client, item: ReviewItem, htmx: bool = True, **data: str):
    """As the inbox posts it: with the hash of the content the row shows."""
    form = {"shown": ReviewItem.objects.get(pk=item.pk).content_hash, **data}
    return client.post(reverse("reviews:inbox-decide", args=[item.pk]), form, **(HTMX if htmx else {}))


@pytest.fixture
def validation(vlevel_api) -> tuple[str, ReviewItem]:
    return waiting_for_validation(vlevel_api)


def as_user(client: Client, user) -> Client:
    client.force_login(user)
    return client


# Who sees what -----------------------------------------------------------------------------------

INBOX_PAGES = ["reviews:inbox", "reviews:inbox-pending", "reviews:inbox-decisions-csv"]


@pytest.mark.django_db
@pytest.mark.parametrize("name", INBOX_PAGES)
def test_anonymous_visitors_are_sent_to_log_in(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.django_db
@pytest.mark.parametrize("name", INBOX_PAGES)
def test_an_account_without_a_role_is_refused(client, outsider, name):
    assert as_user(client, outsider).get(reverse(name)).status_code == 403


@pytest.mark.django_db
def test_a_viewer_sees_the_pending_items_without_decision_buttons(client, viewer, validation):
    _, item = validation
    html = as_user(client, viewer).get(reverse("reviews:inbox")).content.decode()

    assert f'data-item-id="{item.pk}"' in html
    assert "agent.seo.vlevel asks to run 1 action(s)" in html
    assert reverse("reviews:inbox-decide", args=[item.pk]) not in html
    assert 'name="decision"' not in html
    assert "deciding needs the reviewer role" in html


@pytest.mark.django_db
def test_a_reviewer_gets_approve_and_reject_buttons_that_swap_the_row(client, reviewer, validation):
    _, item = validation
    html = as_user(client, reviewer).get(reverse("reviews:inbox")).content.decode()

    url = reverse("reviews:inbox-decide", args=[item.pk])
    row = html[html.index(f'id="review-item-{item.pk}"') :]
    row = row[: row.index("</article>")]
    # Approve and reject on the item's line, and again under its comment once it is opened.
    assert row.count(f'hx-post="{url}"') == 4
    assert f'aria-label="Approve #{item.pk}"' in row
    assert f'aria-label="Reject #{item.pk}"' in row
    assert 'value="approve"' in html
    assert 'value="reject"' in html
    assert 'hx-target="closest .review-item"' in html
    assert 'hx-swap="outerHTML"' in html


@pytest.mark.django_db
def test_a_validation_item_shows_actions_reasons_warnings_the_last_ai_message_and_the_session(
    client, reviewer, validation
):
    session_id, _ = validation
    html = as_user(client, reviewer).get(reverse("reviews:inbox")).content.decode()

    assert "Run mcp__chrome-devtools__take_snapshot (execute) with url=&#x27;https://shop.example.com&#x27;" in html
    assert "the manifest requires approval for mcp__chrome-devtools__take_snapshot" in html
    assert "has execute permission: it changes things" in html
    assert "I will take a snapshot of the home page." in html
    assert f'href="{reverse("sessions:session-detail", args=[session_id])}">Snapshot the shop</a>' in html
    assert f'href="{reverse("agents:agent-detail", args=["agent.seo.vlevel"])}"' in html


@pytest.mark.django_db
def test_a_multiple_choice_question_offers_each_option_as_an_answer(client, reviewer, vlevel_api):
    waiting_for_answer(vlevel_api, CHOICE)
    html = as_user(client, reviewer).get(reverse("reviews:inbox")).content.decode()

    assert "Which page first?" in html
    assert 'hx-vals=\'{"answer": "Home"}\'' in html
    assert 'hx-vals=\'{"answer": "Checkout"}\'' in html
    assert 'value="answer"' in html
    row = html[html.index('class="review-item') : html.index("</article>")]
    assert 'value="approve"' not in row


@pytest.mark.django_db
def test_a_yes_no_question_is_approved_or_rejected_as_an_answer(client, reviewer, vlevel_api):
    waiting_for_answer(vlevel_api, YES_NO)
    html = as_user(client, reviewer).get(reverse("reviews:inbox")).content.decode()

    assert "May I re-audit the whole shop?" in html
    assert 'hx-vals=\'{"answer": "Approved"}\'' in html
    assert 'hx-vals=\'{"answer": "Rejected"}\'' in html


@pytest.fixture
def escalation_item(vlevel_api) -> ReviewItem:
    """A job whose low confidence escalates; agent.seo.architect is not registered, so a human decides."""
    job = vlevel_api.post("/jobs", envelope()).json()
    vlevel_api.post(f"/jobs/{job['jobId']}/result", result(confidence=0.2))
    return ReviewItem.objects.get(kind="escalation")


@pytest.mark.django_db
def test_an_escalation_shows_its_triggers_and_links_the_job(client, reviewer, escalation_item):
    html = as_user(client, reviewer).get(reverse("reviews:inbox")).content.decode()

    assert "<code>confidence &lt; 0.7</code>" in html
    assert f'href="/agents/jobs/{escalation_item.payload["job"]}/"' in html
    assert "Approve (handled)" in html


# Deciding ----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_approving_runs_the_actions_and_shows_who_approved_in_place(client, reviewer, validation):
    session_id, item = validation

    response = decide(as_user(client, reviewer), item, decision="approve", comment="looks safe")

    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<article class="review-item review-approved"')
    assert "Approved by rita at " in html
    assert "“looks safe”" in html
    assert "<html" not in html
    session = AISession.objects.get(pk=session_id)
    assert session.phase == "EXECUTING_ACTIONS"
    decision = ReviewDecision.objects.get(item=item)
    assert (decision.decision, decision.user, decision.decided_by) == ("approve", reviewer, "user:rita")
    assert decision.comment == "looks safe"


@pytest.mark.django_db
def test_rejecting_lets_the_chat_go_on_without_the_actions(client, reviewer, validation):
    session_id, item = validation

    response = decide(as_user(client, reviewer), item, decision="reject")

    assert "Rejected by rita at " in response.content.decode()
    session = AISession.objects.get(pk=session_id)
    assert session.phase == "IDLE"
    assert session.is_active
    summaries = [m.system_message["summary"] for m in session.messages.filter(sender="SYSTEM")]
    assert any("rejected by a reviewer" in summary for summary in summaries)


@pytest.mark.django_db
def test_answering_a_question_sends_the_chosen_option_to_the_session(client, reviewer, vlevel_api):
    session_id, item = waiting_for_answer(vlevel_api, CHOICE)

    response = decide(as_user(client, reviewer), item, decision="answer", answer="Checkout")

    assert "Answered “Checkout” by rita" in response.content.decode()
    session = AISession.objects.get(pk=session_id)
    assert session.phase == "CALLING_AI"
    assert session.messages.filter(sender="USER", text_content="Checkout").exists()
    assert ReviewItem.objects.get(pk=item.pk).status == "answered"


@pytest.mark.django_db
def test_rejecting_a_yes_no_question_tells_the_model_it_was_rejected(client, reviewer, vlevel_api):
    session_id, item = waiting_for_answer(vlevel_api, YES_NO)

    decide(as_user(client, reviewer), item, decision="answer", answer="Rejected")

    assert AISession.objects.get(pk=session_id).messages.filter(sender="USER", text_content="Rejected").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"decision": "answer", "answer": "Delete everything"}, "Choose one of the answers"),
        ({"decision": "approve"}, "answered, not approved"),
        ({"decision": "bless"}, "Select a valid choice"),
    ],
)
def test_a_decision_the_question_does_not_offer_is_refused_in_the_row(client, reviewer, vlevel_api, data, message):
    session_id, item = waiting_for_answer(vlevel_api, CHOICE)
    as_user(client, reviewer)

    response = decide(client, item, **data)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert decide(client, item, htmx=False, **data).status_code == 400
    assert ReviewItem.objects.get(pk=item.pk).status == "pending"
    assert AISession.objects.get(pk=session_id).phase == "WAITING_COMMUNICATION_RESPONSE"


@pytest.mark.django_db
def test_approving_an_escalation_marks_it_handled(client, reviewer, escalation_item):
    response = decide(as_user(client, reviewer), escalation_item, decision="approve")

    assert "Approved" in response.content.decode()
    escalation = Escalation.objects.get(review_item=escalation_item)
    assert escalation.status == "handled"
    assert escalation.steps[-1]["by"] == "user:rita"


@pytest.mark.django_db
def test_a_second_reviewer_is_told_who_decided_first(client, reviewer, admin_operator, validation):
    _, item = validation
    decide(as_user(client, reviewer), item, decision="approve")

    second = Client()
    second.force_login(admin_operator)
    response = decide(second, item, decision="reject")

    assert response.status_code == 200
    html = response.content.decode()
    assert "Already approved by rita at " in html
    assert 'name="decision"' not in html
    assert decide(second, item, htmx=False, decision="reject").status_code == 409
    assert ReviewDecision.objects.get(item=item).decision == "approve"
    assert AISession.objects.get(pk=item.payload["session"]).phase == "EXECUTING_ACTIONS"


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["viewer", "outsider"])
def test_only_reviewers_may_decide(client, validation, who, request):
    _, item = validation
    response = decide(as_user(client, request.getfixturevalue(who)), item, decision="approve")

    assert response.status_code == 403
    assert ReviewItem.objects.get(pk=item.pk).status == "pending"


@pytest.mark.django_db
def test_deciding_needs_a_post(client, reviewer, validation):
    _, item = validation
    assert as_user(client, reviewer).get(reverse("reviews:inbox-decide", args=[item.pk])).status_code == 405


@pytest.mark.django_db
def test_a_decision_without_the_csrf_token_is_refused(reviewer, validation):
    _, item = validation
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(reviewer)

    refused = decide(browser, item, decision="approve")
    assert refused.status_code == 403
    assert ReviewItem.objects.get(pk=item.pk).status == "pending"

    page = browser.get(reverse("reviews:inbox"))
    token = str(page.context["csrf_token"])
    accepted = browser.post(
        reverse("reviews:inbox-decide", args=[item.pk]),
        {"decision": "approve", "shown": item.content_hash},
        HTTP_X_CSRFTOKEN=token,
        **HTMX,
    )
    assert accepted.status_code == 200
    assert ReviewItem.objects.get(pk=item.pk).status == "approved"


# Polling and recent decisions ----------------------------------------------------------------------


def poll(client: Client, *shown: ReviewItem) -> str:
    response = client.get(reverse("reviews:inbox-pending"), {"row": [item.pk for item in shown]}, **HTMX)
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.django_db
def test_the_pending_list_reports_the_rows_it_shows_when_it_polls(client, reviewer, validation):
    _, item = validation
    html = as_user(client, reviewer).get(reverse("reviews:inbox")).content.decode()

    assert f'<div id="pending-items" class="review-list" hx-get="{reverse("reviews:inbox-pending")}" ' in html
    assert f'<input type="hidden" name="row" value="{item.pk}">' in html


@pytest.mark.django_db
def test_the_poll_brings_only_the_items_the_page_does_not_show_yet(client, reviewer, vlevel_api, escalation_item):
    as_user(client, reviewer)
    assert 'class="review-item' not in poll(client, escalation_item)

    _, item = waiting_for_validation(vlevel_api)
    html = poll(client, escalation_item)

    assert html.count('class="review-item') == 1
    assert f'data-item-id="{item.pk}"' in html
    assert '<div id="recent-decisions" hx-swap-oob="true">' in html
    assert "<html" not in html


@pytest.mark.django_db
def test_the_poll_updates_in_place_a_row_decided_elsewhere(client, reviewer, admin_operator, validation):
    _, item = validation
    reviews.decide(item.pk, actor=Principal(user=admin_operator), decision="approve")

    html = poll(as_user(client, reviewer), item)

    assert (
        f'id="review-item-{item.pk}" data-item-id="{item.pk}" data-kind="session_validation" hx-swap-oob="true">'
        in html
    )
    assert "Approved by alice at " in html
    assert 'name="row"' not in html


@pytest.mark.django_db
def test_the_comment_being_typed_is_kept_when_the_row_comes_back(client, reviewer, validation):
    _, item = validation
    html = as_user(client, reviewer).get(reverse("reviews:inbox")).content.decode()
    assert (
        f'id="comment-{item.pk}" maxlength="2000" placeholder="Optional, kept with the decision" hx-preserve>' in html
    )


@pytest.mark.django_db
def test_recent_decisions_say_what_who_when_and_the_payload_hash(client, reviewer, viewer, validation):
    _, item = validation
    decide(as_user(client, reviewer), item, decision="reject", comment="not on production")
    decision = ReviewDecision.objects.get(item=item)

    html = as_user(client, viewer).get(reverse("reviews:inbox")).content.decode()

    assert "Recent decisions" in html
    assert f'<a href="{reverse("reviews:item", args=[item.pk])}">#{item.pk}</a> {item.title}' in html
    assert "not on production" in html
    assert f">{decision.payload_hash[:12]}</code>" in html
    assert decision.decided_at.strftime("%Y-%m-%d %H:%M") in html
    assert 'class="review-item' not in html
    assert "Nothing waits for a decision." in html


# CSV export --------------------------------------------------------------------------------------


def csv_rows(response) -> list[list[str]]:
    body = b"".join(response.streaming_content).decode()
    return list(csv.reader(io.StringIO(body)))


@pytest.mark.django_db
def test_the_csv_export_lists_every_decision(client, reviewer, viewer, validation):
    _, item = validation
    decide(as_user(client, reviewer), item, decision="approve", comment="ok")
    decision = ReviewDecision.objects.get(item=item)

    response = as_user(client, viewer).get(reverse("reviews:inbox-decisions-csv"))

    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="review-decisions.csv"'
    rows = csv_rows(response)
    assert rows[0] == [
        "decided_at",
        "item_id",
        "kind",
        "title",
        "agent",
        "decision",
        "decided_by",
        "comment",
        "payload_hash",
        "key_minted_by",
        "item_url",
        "amended_hash",
    ]
    assert rows[1] == [
        decision.decided_at.isoformat(),
        str(item.pk),
        "session_validation",
        item.title,
        "agent.seo.vlevel",
        "approve",
        "user:rita",
        "ok",
        decision.payload_hash,
        "",
        f"http://testserver/inbox/items/{item.pk}/",
        "",
    ]


@pytest.mark.django_db
def test_the_csv_export_defuses_spreadsheet_formulas(client, reviewer):
    item = reviews.open_item(actor=SYSTEM, kind="memory_promotion", title='=HYPERLINK("http://x")', payload={})
    reviews.decide(item.pk, actor=Principal(user=reviewer), decision="reject", comment="+1 no")

    rows = csv_rows(as_user(client, reviewer).get(reverse("reviews:inbox-decisions-csv")))

    assert rows[1][3] == '\'=HYPERLINK("http://x")'
    assert rows[1][7] == "'+1 no"


# Query counts ------------------------------------------------------------------------------------


def fill_inbox(agent, n: int, decider) -> None:
    """``n`` pending items of each kind the inbox renders, and ``n`` decided ones."""
    for i in range(n):
        session = str(uuid4())
        reviews.open_item(
            actor=SYSTEM,
            kind="session_validation",
            title=f"validation {i}",
            agent=agent,
            payload={
                "session": session,
                "sessionName": f"S{i}",
                "lastAiMessage": "Hi",
                "validationContext": {"actions": ["Run x"], "reasons": ["r"], "warnings": ["w"]},
                "actionCommands": [SNAPSHOT],
            },
        )
        reviews.open_item(
            actor=SYSTEM,
            kind="session_communication",
            title=f"question {i}",
            agent=agent,
            payload={"session": session, "sessionName": f"S{i}", "lastAiMessage": "Hi", "module": CHOICE},
        )
        reviews.open_item(
            actor=SYSTEM,
            kind="escalation",
            title=f"escalation {i}",
            agent=agent,
            payload={"escalation": 0, "job": str(uuid4()), "triggers": ["confidence < 0.7"], "output": {}},
        )
        done = reviews.open_item(actor=SYSTEM, kind="memory_promotion", title=f"done {i}", agent=agent, payload={})
        reviews.decide(done.pk, actor=Principal(user=decider), decision="approve", comment=f"c{i}")


def get_all(client: Client, name: str):
    """The page as the browser asks for it; a poll reports every decided row as still shown, so
    the out-of-band updates are counted too."""
    if name != "reviews:inbox-pending":
        return client.get(reverse(name))
    shown = ReviewItem.objects.exclude(status="pending").values_list("pk", flat=True)
    return client.get(reverse(name), {"row": list(shown)}, **HTMX)


def rows(response) -> int:
    if response.streaming:
        return len(csv_rows(response)) - 1
    return response.content.decode().count('class="review-item')


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "few_rows", "many_rows"),
    # 75 pending items: the page and the poll show one page of them (25); the poll also the 25 decided rows
    [("reviews:inbox", 3, 25), ("reviews:inbox-pending", 4, 50), ("reviews:inbox-decisions-csv", 1, 25)],
)
def test_queries_do_not_grow_with_the_number_of_items(
    client, reviewer, vlevel, name, few_rows, many_rows, django_assert_max_num_queries, settings
):
    settings.AGENT_MAX_PENDING_APPROVALS = 50  # one agent asks all 50 validations and questions
    as_user(client, reviewer)
    fill_inbox(vlevel, 1, reviewer)
    with CaptureQueriesContext(connection) as few:
        assert rows(get_all(client, name)) == few_rows

    fill_inbox(vlevel, 24, reviewer)
    with django_assert_max_num_queries(len(few)):
        assert rows(get_all(client, name)) == many_rows
