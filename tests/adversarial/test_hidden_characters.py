"""Agent text cannot read differently from what it is: pages show every bidirectional control and
invisible character as a visible marker (``⟨U+202E⟩``), never raw, and isolate right-to-left text
(``<bdi>``) from the page around it.

Finding 15a: an agent's text with U+202E RIGHT-TO-LEFT OVERRIDE rendered raw in the inbox, so a
reviewer could be shown "refund 100 EUR" for a text that says "refund 001 EUR" the other way round."""

from __future__ import annotations

import json
import sys
import unicodedata

import pytest
from django.test import Client
from django.urls import reverse

from agents.models import Job
from governance.kernel import invisible
from governance.kernel.principals import SYSTEM
from governance.reviews.models import ReviewDecision
from memory.learnings import create_learning
from memory.subjects import services as subjects
from tests.adversarial.conftest import ALICE
from tests.adversarial.test_review_binding import asks_to_run
from tests.governance.reviews.test_inbox import CHOICE, waiting_for_answer
from tests.support.inbox import decide_in_inbox

RLO, PDF = "\u202e", "\u202c"
# The finding's list: bidirectional controls, zero-width characters, the BOM, a tag character, ESC.
HIDDEN = (
    "\u202e\u200e\u200f\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u061c\u200b\u200c\u200d\ufeff\U000e0041\x1b"
)
SAYS = f"Refund {RLO}001{PDF} EUR to the customer"


@pytest.fixture
def browser(reviewer) -> Client:
    browser = Client()
    browser.force_login(reviewer)
    return browser


def assert_shown_never_raw(html: str, hidden: str = RLO + PDF) -> None:
    """No character of ``hidden`` is raw in the page; each is a marker (a control code inside JSON
    may be the JSON escape ``\\u001b`` instead, visible too)."""
    for char in hidden:
        assert char not in html, f"U+{ord(char):04X} is raw in the page"
        if unicodedata.category(char) != "Cc":
            assert f'title="{unicodedata.name(char)}">⟨U+{ord(char):04X}⟩</span>' in html


@pytest.mark.django_db
def test_a_question_with_a_bidi_override_shows_the_marker_in_the_inbox(vlevel_api, browser):
    module = {**CHOICE, "data": {"question": SAYS, "options": ["Yes", f"No {RLO}thanks", "כן, 100 EUR"]}}
    waiting_for_answer(vlevel_api, module, name=f"Refunds {RLO}")

    html = browser.get(reverse("reviews:inbox")).content.decode()

    assert_shown_never_raw(html)
    assert 'Refund <span class="hidden-char" title="RIGHT-TO-LEFT OVERRIDE">⟨U+202E⟩</span>001' in html
    assert "<li><bdi>כן, 100 EUR</bdi></li>" in html  # right-to-left text is isolated from the page


@pytest.mark.django_db
def test_an_option_with_a_hidden_character_is_answered_as_it_is(vlevel_api, browser):
    option = f"No {RLO}thanks"
    _, item = waiting_for_answer(vlevel_api, {**CHOICE, "data": {"question": "Refund?", "options": ["Yes", option]}})

    html = browser.get(reverse("reviews:inbox")).content.decode()
    answered = decide_in_inbox(browser, item.pk, "answer", answer=option)

    assert """hx-vals='{"answer": "No \\u202Ethanks"}'""" in html  # the button's value, escaped for its script
    assert answered.status_code == 200
    assert ReviewDecision.objects.get(item=item).answer == option


@pytest.mark.django_db
def test_every_hidden_character_in_an_action_is_shown_in_the_inbox(vlevel_api, browser):
    asks_to_run(vlevel_api, f"SELECT 1;{HIDDEN} DROP TABLE customers")

    html = browser.get(reverse("reviews:inbox")).content.decode()

    assert_shown_never_raw(html, HIDDEN)


@pytest.mark.django_db
def test_a_session_page_shows_the_marker_in_the_messages(vlevel_api, browser):
    from tests.governance.reviews.test_inbox import send, start_chat
    from tests.sessions.test_session_flow import ai

    session_id = start_chat(vlevel_api, f"Chat {RLO}")
    send(vlevel_api, session_id, {"type": "UserMessageSent", "payload": {"text": f"hello {RLO}"}})
    send(vlevel_api, session_id, ai(preText=SAYS, completed=True))

    html = browser.get(reverse("sessions:session-detail", args=[session_id])).content.decode()

    assert_shown_never_raw(html.split("<title>")[0] + html.split("</title>")[1])  # a tab title is text, not HTML


@pytest.mark.django_db
def test_a_job_page_shows_the_marker_in_what_the_agent_sent(world, browser):
    Job.objects.filter(pk=world.job_id).update(payload={"urls": [f"https://example.com/{RLO}gpj.exe"]})

    html = browser.get(reverse("agents:job-detail", args=[world.job_id])).content.decode()

    assert_shown_never_raw(html, RLO)


@pytest.mark.django_db
def test_a_learning_page_shows_the_marker(vlevel, browser):
    from governance.kernel.principals import Principal

    learning = create_learning(
        actor=Principal(agent=vlevel), story="PD-1", gate=3, domain="seo", project="shop", tags=["#x"], text=SAYS
    )

    html = browser.get(reverse("memory:learning-detail", args=[learning.pk])).content.decode()

    assert_shown_never_raw(html)


@pytest.mark.django_db
def test_a_subject_page_shows_the_marker(db, browser):
    documents = {name: json.loads((ALICE / f"{name}.json").read_text(encoding="utf-8")) for name in ("conversations",)}
    documents["conversations"]["conversations"][0]["summary"] = SAYS
    subjects.import_documents("mallory", documents, actor=SYSTEM)

    html = browser.get(reverse("memory:subject-detail", args=["mallory"])).content.decode()

    assert_shown_never_raw(html)


def test_every_format_and_bidi_character_is_hidden_and_line_breaks_are_not():
    every = [chr(code) for code in range(sys.maxunicode + 1) if unicodedata.category(chr(code)) == "Cf"]
    text = "a\tb\nc\r" + "".join(every)

    runs = list(invisible.split(text))

    assert runs[0] == ("a\tb\nc\r", False)
    assert [run for run, hidden in runs[1:] if hidden] == every
