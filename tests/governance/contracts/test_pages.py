"""The contract pages, their exports and the contract admin: who may read them, what they show,
that every figure is the aggregates' and that a Markdown edit in the admin stores a new version."""

from __future__ import annotations

import csv
import io
import re
from datetime import date, datetime, time, timedelta
from typing import Any

import pytest
from django.db.models import Sum
from django.test import Client
from django.urls import reverse, reverse_lazy
from django.utils import timezone

from governance.contracts import catalog as contract_catalog
from governance.contracts import demo as contract_demo
from governance.contracts import services as contracts
from governance.contracts.models import Contract, ContractCheck, ContractDailyStat, ContractViolationStat
from governance.kernel.principals import SYSTEM
from tests.factories.agents import AgentFactory
from tests.factories.governance import UserFactory

RANKING, INTENT, ANSWER = "memory_retrieval_ranking", "intent_ingestion", "retrieval_answer"
GOOD_RANKING = {"rankings": [{"id": 7, "score": 0.9}]}
# The contract CSV's columns as a spreadsheet user reads them (written out: a renamed column must fail here).
CSV_HEADER = [
    "row",
    "day",
    "path",
    "code",
    "checks",
    "compliant",
    "compliance_rate",
    "count",
    "expected_type",
    "required",
    "runtime_effect",
]
STRING_ID = {"rankings": [{"id": "7", "score": 0.9}]}
NO_SCORE = {"rankings": [{"id": 7}]}


def imported(*names: str) -> None:
    """Some contracts of the shipped catalog, through the service (a full import is not needed)."""
    for doc in contract_catalog.parse(contracts.CATALOG.read_text(encoding="utf-8")):
        if doc.name in names:
            contracts.save_contract(doc, actor=SYSTEM)


def _at(days_ago: int) -> datetime:
    """Just after the start of a local day, so the check counts for that day whatever the hour."""
    day = timezone.localdate() - timedelta(days=days_ago)
    return timezone.make_aware(datetime.combine(day, time(0, 0, 1)))


def checked(name: str, output: Any, *, days_ago: int, agent: Any = None) -> None:
    contract = contracts.current(name)
    item = contracts.Submission(contract, output, known_ids=frozenset({"7"}), agent=agent, at=_at(days_ago))
    contracts.check([item], principal=SYSTEM)


@pytest.fixture
def catalog(db) -> None:
    imported(RANKING, INTENT, ANSWER)


@pytest.fixture
def audited(catalog, agent, other_agent) -> None:
    """agent.seo.vlevel: 6 ranking outputs, 3 compliant (2 string ids, 1 missing score);
    agent.rag.indexer: 2 intents, 1 compliant; an operator: 1 answer, not compliant."""
    for output in (GOOD_RANKING, GOOD_RANKING, STRING_ID):
        checked(RANKING, output, days_ago=3, agent=agent)
    for output in (GOOD_RANKING, STRING_ID, NO_SCORE):
        checked(RANKING, output, days_ago=0, agent=agent)
    checked(INTENT, {"intent": {"label": "AUDIT", "confidence": 0.4}}, days_ago=2, agent=other_agent)
    checked(INTENT, {"intent": {"label": "AUDIT", "confidence": 1.4}}, days_ago=2, agent=other_agent)
    checked(ANSWER, {"status": "maybe"}, days_ago=0)


def _pages() -> list[str]:
    return [
        reverse("contracts:contracts"),
        reverse("contracts:contract-detail", args=[RANKING]),
        reverse("contracts:contract-report-md", args=[RANKING]),
        reverse("contracts:contract-report-csv", args=[RANKING]),
        reverse("contracts:contract-agent", args=["agent.seo.vlevel"]),
        reverse("contracts:contract-fleet"),
        reverse("contracts:contract-fleet-md"),
        reverse("contracts:contract-fleet-csv"),
    ]


def _csv(response: Any) -> list[list[str]]:
    return list(csv.reader(io.StringIO(response.content.decode())))


def _htmx(**extra: str) -> dict[str, str]:
    return {"HTTP_HX_REQUEST": "true", **extra}


# --- Access --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_every_page_sends_anonymous_visitors_to_the_login(client, audited):
    for url in [*_pages(), reverse("contracts:contract-spec-audit", args=[RANKING])]:
        response = client.get(url) if "spec-audit" not in url else client.post(url, {"document": "{}"})
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url


@pytest.mark.django_db
def test_an_account_without_a_role_is_refused_every_page(client, outsider, audited):
    client.force_login(outsider)
    for url in _pages():
        assert client.get(url).status_code == 403, url
    assert client.post(reverse("contracts:contract-spec-audit", args=[RANKING]), {"document": "{}"}).status_code == 403


@pytest.mark.django_db
def test_every_page_and_export_renders_for_a_viewer(client, viewer, audited):
    client.force_login(viewer)
    for url in _pages():
        response = client.get(url)
        assert response.status_code == 200, url
    html = client.get(reverse("contracts:contract-fleet")).content.decode()
    assert f'<a href="{reverse("contracts:contracts")}" aria-current="page">Contracts</a>' in html
    assert 'style="' not in html


@pytest.mark.django_db
def test_pages_answer_with_an_empty_catalog(client, viewer):
    client.force_login(viewer)

    html = client.get(reverse("contracts:contracts")).content.decode()
    assert "has not been imported yet" in html
    assert client.get(reverse("contracts:contract-fleet")).status_code == 200
    assert client.get(reverse("contracts:contract-detail", args=[RANKING])).status_code == 404


@pytest.mark.django_db
def test_reading_the_catalog_without_the_audit_shows_no_figures(client, audited):
    from django.contrib.auth.models import Permission

    reader = UserFactory(username="carla")
    reader.user_permissions.add(Permission.objects.get(codename="view_contract"))
    client.force_login(reader)

    catalog_html = client.get(reverse("contracts:contracts")).content.decode()
    detail_html = client.get(reverse("contracts:contract-detail", args=[RANKING])).content.decode()

    assert RANKING in catalog_html
    assert "Compliance" not in catalog_html
    assert "Fleet report" not in catalog_html
    assert "Spec audit" in detail_html
    assert 'id="report-heading"' not in detail_html
    assert client.get(reverse("contracts:contract-fleet")).status_code == 403
    assert client.get(reverse("contracts:contract-report-csv", args=[RANKING])).status_code == 403
    assert client.post(reverse("contracts:contract-spec-audit", args=[RANKING]), {"document": "{}"}).status_code == 200


# --- Catalog -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_catalog_lists_current_contracts_with_fields_and_compliance(client, viewer, audited):
    client.force_login(viewer)

    html = client.get(reverse("contracts:contracts")).content.decode()

    assert "3 contracts" in html
    row = re.search(
        rf"<tr>\s*<td><a href=\"{reverse('contracts:contract-detail', args=[RANKING])}\">.*?</tr>", html, re.S
    )
    cells = re.findall(r'<td class="num[^"]*">([^<]*)</td>', row.group(0))
    fields = Contract.objects.get(name=RANKING).fields.count()
    assert cells == ["1", str(fields), "6", "50.0%"]  # version, fields, checks, compliance
    assert "AGI_Evolutive/memory/retrieval.py" in html
    assert "Mémoire" in html


@pytest.mark.django_db
def test_the_catalog_is_searched_by_name_or_module_and_filtered_by_section(client, viewer, audited):
    client.force_login(viewer)

    by_name = client.get(reverse("contracts:contracts"), {"q": "ranking"}).content.decode()
    by_module = client.get(reverse("contracts:contracts"), {"q": "rag5"}).content.decode()
    by_section = client.get(reverse("contracts:contracts"), {"section": "Ingestion I/O"}).content.decode()
    nothing = client.get(reverse("contracts:contracts"), {"q": "no such contract"}).content.decode()

    assert RANKING in by_name
    assert INTENT not in by_name
    assert ANSWER in by_module
    assert RANKING not in by_module
    assert INTENT in by_section
    assert RANKING not in by_section
    assert "No contract matches these filters." in nothing


@pytest.mark.django_db
def test_an_htmx_search_gets_only_the_table_and_a_history_restore_the_whole_page(client, viewer, audited):
    client.force_login(viewer)

    partial = client.get(reverse("contracts:contracts"), {"q": "intent"}, **_htmx()).content.decode()
    restored = client.get(
        reverse("contracts:contracts"), {"q": "intent"}, **_htmx(HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    ).content.decode()

    assert "<html" not in partial
    assert "1 contract" in partial
    assert INTENT in partial
    assert RANKING not in partial
    assert "<html" in restored
    assert 'hx-push-url="true"' in restored


@pytest.mark.django_db
def test_an_unknown_section_is_ignored(client, viewer, audited):
    client.force_login(viewer)

    html = client.get(reverse("contracts:contracts"), {"section": "Nowhere"}).content.decode()

    assert "3 contracts" in html


@pytest.mark.django_db
def test_the_catalog_costs_the_same_queries_for_one_contract_or_many(
    client, viewer, audited, django_assert_max_num_queries
):
    client.force_login(viewer)
    client.get(reverse("contracts:contracts"), {"q": "ranking"})  # session and permission caches warmed
    with django_assert_max_num_queries(8) as one:
        client.get(reverse("contracts:contracts"), {"q": "ranking"})
    imported(*[doc.name for doc in contract_catalog.parse(contracts.CATALOG.read_text(encoding="utf-8"))])

    with django_assert_max_num_queries(len(one)):
        html = client.get(reverse("contracts:contracts")).content.decode()
    assert html.count('<a href="/contracts/') >= 70


# --- Detail and report ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_detail_page_shows_fields_notes_versions_and_the_report(client, viewer, audited):
    client.force_login(viewer)

    html = client.get(reverse("contracts:contract-detail", args=[RANKING])).content.decode()

    assert "<code>rankings[*].adjusted_score</code>" in html
    assert "<code>rankings[*].score</code>" in html  # the alternative of the same row
    assert "identifiant numérique existant" in html  # the catalog's words
    assert "must name a known id" in html  # the checkable constraint
    assert "Vigilance" in html
    assert "Éviter les ids" in html
    assert "Version 1" in html
    assert "current" in html
    assert '<svg class="sparkline"' in html
    top = re.search(r'<table class="list compact top-paths">.*?</table>', html, re.S).group(0)
    assert re.findall(r"<code>([^<]+)</code>", top) == ["rankings[*].id", "rankings[*].adjusted_score"]
    assert "a numeric id written as a string is not converted by the runtime" in html  # the violation's hint
    assert "&quot;7&quot;" in html  # the failing output as stored
    assert html.count('class="failing-check"') == 3


@pytest.mark.django_db
def test_older_versions_stay_readable_by_number(client, viewer, audited):
    (doc,) = [d for d in contract_catalog.parse(contracts.CATALOG.read_text(encoding="utf-8")) if d.name == RANKING]
    doc.notes.append("Remarque: a note added in version 2.")
    contracts.save_contract(doc, actor=SYSTEM)
    client.force_login(viewer)

    current = client.get(reverse("contracts:contract-detail", args=[RANKING])).content.decode()
    older = client.get(reverse("contracts:contract-detail", args=[RANKING]), {"version": 1}).content.decode()

    assert "a note added in version 2" in current
    assert "a note added in version 2" not in older
    assert "This is an older version" in older
    assert f'href="{reverse("contracts:contract-detail", args=[RANKING])}?version=1"' in current
    assert client.get(reverse("contracts:contract-detail", args=[RANKING]), {"version": 9}).status_code == 404
    assert client.get(reverse("contracts:contract-detail", args=[RANKING]), {"version": "x"}).status_code == 404
    assert client.get(reverse("contracts:contract-detail", args=["no_such_contract"])).status_code == 404


@pytest.mark.django_db
def test_since_narrows_every_report_and_a_bad_date_is_said_and_ignored(client, viewer, audited):
    client.force_login(viewer)
    today = timezone.localdate().isoformat()

    detail = client.get(reverse("contracts:contract-detail", args=[RANKING]), {"since": today})
    rows = _csv(client.get(reverse("contracts:contract-report-csv", args=[RANKING]), {"since": today}))
    bad = client.get(reverse("contracts:contract-fleet"), {"since": "yesterday"})

    assert detail.context["report"].stats.checks == 3
    assert rows[1][:7] == ["total", "", "", "", "3", "1", "0.3333"]
    assert bad.status_code == 200
    assert "Enter a valid date. Showing the checks since" in bad.content.decode()
    assert bad.context["report"].stats.checks == 9  # the default window


@pytest.mark.django_db
def test_a_far_away_since_is_refused_and_a_long_window_is_charted_from_its_first_check(client, viewer, audited):
    client.force_login(viewer)

    ancient = client.get(reverse("contracts:contract-fleet"), {"since": "1900-01-01"})
    long = client.get(reverse("contracts:contract-fleet"), {"since": "2001-01-01"})

    assert "Reports start on 2000-01-01 at the earliest." in ancient.content.decode()
    assert ancient.context["report"].stats.checks == 9
    checks_chart = long.context["report"].charts[1]
    assert long.context["report"].stats.checks == 9
    assert checks_chart["trend"][0][0] == (timezone.localdate() - timedelta(days=3)).isoformat()


@pytest.mark.django_db
def test_reports_read_the_aggregates_not_the_checks(client, viewer, audited):
    ContractCheck.objects.all().delete()  # the aggregates stay: a report must not need the checks
    client.force_login(viewer)

    fleet = client.get(reverse("contracts:contract-fleet"))
    detail = client.get(reverse("contracts:contract-detail", args=[RANKING]))

    assert fleet.context["report"].stats.checks == 9
    assert detail.context["report"].stats.top_paths[0] == {"path": "rankings[*].id", "code": "wrong_type", "count": 2}
    assert detail.context["report"].examples == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url", [reverse_lazy("contracts:contract-fleet"), reverse_lazy("contracts:contract-detail", args=[RANKING])]
)
def test_report_pages_cost_the_same_queries_however_many_checks(
    client, viewer, audited, url, django_assert_max_num_queries
):
    client.force_login(viewer)
    client.get(url)
    with django_assert_max_num_queries(15) as few:
        client.get(url)
    for n in range(5):
        more = AgentFactory(agent_id=f"agent.more.a{n}")
        for days_ago in range(4):
            checked(RANKING, STRING_ID, days_ago=days_ago, agent=more)
            checked(INTENT, {"intent": {"label": "X", "confidence": 2}}, days_ago=days_ago, agent=more)

    with django_assert_max_num_queries(len(few)):
        client.get(url)


# --- Exports -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_contract_csv_is_the_aggregates(client, viewer, audited):
    client.force_login(viewer)

    response = client.get(reverse("contracts:contract-report-csv", args=[RANKING]))

    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith(f'attachment; filename="contract-{RANKING}-since-')
    rows = _csv(response)
    assert rows[0] == CSV_HEADER
    daily = ContractDailyStat.objects.filter(contract_name=RANKING)
    totals = daily.aggregate(checks=Sum("checks"), compliant=Sum("compliant"))
    assert rows[1] == ["total", "", "", "", str(totals["checks"]), str(totals["compliant"]), "0.5000", "", "", "", ""]
    days = {r[1]: (int(r[4]), int(r[5])) for r in rows if r[0] == "day"}
    expected = {}
    for stat in daily:
        checks, compliant = expected.get(stat.day.isoformat(), (0, 0))
        expected[stat.day.isoformat()] = (checks + stat.checks, compliant + stat.compliant)
    assert days == expected
    # Seed 000's columns of the violated row: Type attendu, Obligatoire, Effet runtime.
    described = {(r[2], r[3]): r[8:] for r in rows if r[0] == "violation"}
    assert described[("rankings[*].id", "wrong_type")] == [
        "identifiant numérique existant",
        "Oui",
        "Permet d\u2019associer l\u2019ajustement au candidat source.",
    ]
    assert described[("rankings[*].adjusted_score", "alternative_missing")] == [
        "nombre",
        "Oui",
        "Sert de score LLM mixé à 35\u202f% dans la note finale.",
    ]
    assert all(r[8:] == ["", "", ""] for r in rows[1:] if r[0] != "violation")
    violations = {(r[2], r[3]): int(r[7]) for r in rows if r[0] == "violation"}
    stored = ContractViolationStat.objects.filter(contract_name=RANKING).values_list("path", "code", "count")
    summed: dict[tuple[str, str], int] = {}
    for path, code, count in stored:
        summed[(path, code)] = summed.get((path, code), 0) + count
    assert (
        violations
        == summed
        == {("rankings[*].id", "wrong_type"): 2, ("rankings[*].adjusted_score", "alternative_missing"): 1}
    )


@pytest.mark.django_db
def test_the_contract_markdown_report(client, viewer, audited):
    client.force_login(viewer)

    response = client.get(reverse("contracts:contract-report-md", args=[RANKING]))

    text = response.content.decode()
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert text.startswith(f"# Contract report: `{RANKING}`")
    assert "- Checks: 6" in text
    assert "- Compliance rate: 50.0%" in text
    assert (
        "| `rankings[*].id` | wrong_type | 2 | identifiant numérique existant | Oui "
        "| Permet d\u2019associer l\u2019ajustement au candidat source. |"
    ) in text
    failures = text[text.index("## Recent failing outputs") :]
    assert "expected: identifiant numérique existant; required: Oui; runtime effect: Permet d\u2019associer" in failures
    assert "## Recent failing outputs" in text
    assert '"id": "7"' in text


@pytest.mark.django_db
def test_the_fleet_csv_ranks_contracts_and_agents_from_the_aggregates(client, viewer, audited):
    client.force_login(viewer)

    rows = _csv(client.get(reverse("contracts:contract-fleet-csv")))

    assert rows[0] == ["row", "name", "checks", "compliant", "violations", "violation_rate"]
    assert rows[1:] == [
        ["contract", ANSWER, "1", "0", "1", "1.0000"],
        ["contract", RANKING, "6", "3", "3", "0.5000"],
        ["contract", INTENT, "2", "1", "1", "0.5000"],
        ["agent", "agent.seo.vlevel", "6", "3", "3", "0.5000"],
        ["agent", "agent.rag.indexer", "2", "1", "1", "0.5000"],
    ]
    for kind, name, checks, compliant, violations, _ in rows[1:]:
        key = "contract_name" if kind == "contract" else "agent_label"
        summed = ContractDailyStat.objects.filter(**{key: name}).aggregate(
            checks=Sum("checks"), compliant=Sum("compliant"), violations=Sum("violations")
        )
        assert (int(checks), int(compliant), int(violations)) == tuple(summed.values())


@pytest.mark.django_db
def test_the_fleet_page_and_markdown(client, viewer, audited):
    client.force_login(viewer)

    html = client.get(reverse("contracts:contract-fleet")).content.decode()
    text = client.get(reverse("contracts:contract-fleet-md")).content.decode()

    assert html.index(ANSWER) < html.index(RANKING) < html.index(INTENT)  # worst violation rate first
    assert f'href="{reverse("contracts:contract-agent", args=["agent.rag.indexer"])}"' in html
    assert f"{reverse('contracts:contract-fleet-csv')}?since=" in html
    assert text.startswith("# Fleet contract report")
    assert f"| `{ANSWER}` | 1 | 0 | 1 | 100.0% |" in text
    assert "| `agent.rag.indexer` | 2 | 1 | 1 | 50.0% |" in text


@pytest.mark.django_db
def test_exports_quote_cells_a_spreadsheet_would_run(client, viewer, catalog):
    shady = AgentFactory(agent_id="=cmd|calc")
    checked(RANKING, STRING_ID, days_ago=0, agent=shady)
    client.force_login(viewer)

    rows = _csv(client.get(reverse("contracts:contract-fleet-csv")))

    assert ["agent", "'=cmd|calc", "1", "0", "1", "1.0000"] in rows


@pytest.mark.django_db
def test_the_agent_report_ranks_that_agents_contracts(client, viewer, audited, agent):
    checked(INTENT, {"intent": {"label": ""}}, days_ago=1, agent=agent)
    client.force_login(viewer)

    response = client.get(reverse("contracts:contract-agent", args=[agent.agent_id]))

    report = response.context["report"]
    assert [(r["contract_name"], r["checks"], r["violation_rate"]) for r in report.contracts] == [
        (INTENT, 1, 1.0),
        (RANKING, 6, 0.5),
    ]
    assert report.stats.checks == 7
    html = response.content.decode()
    assert f'href="{reverse("agents:agent-detail", args=[agent.agent_id])}"' in html
    assert client.get(reverse("contracts:contract-agent", args=["agent.nobody"])).status_code == 404


# --- Spec audit ----------------------------------------------------------------------------------


def _audit(client: Client, document: str, **extra: Any) -> Any:
    return client.post(reverse("contracts:contract-spec-audit", args=[RANKING]), {"document": document}, **extra)


@pytest.mark.django_db
def test_the_spec_audit_of_an_example_lists_missing_unknown_and_mismatched_fields(client, viewer, catalog):
    client.force_login(viewer)

    response = _audit(client, '{"rankings": [{"id": "7", "extra": 1}]}', **_htmx())

    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    assert "read as an example answer" in html.lower()
    missing = re.search(r'id="spec-missing".*?</section>', html, re.S).group(0)
    unknown = re.search(r'id="spec-unknown".*?</section>', html, re.S).group(0)
    types = re.search(r'id="spec-types".*?</section>', html, re.S).group(0)
    assert "rankings[*].adjusted_score or rankings[*].score" in missing
    assert "<code>rankings[*].extra</code>" in unknown
    assert "<code>rankings[*].id</code>: expected numeric id, declared string" in types


@pytest.mark.django_db
def test_the_spec_audit_reads_a_json_schema(client, viewer, catalog):
    schema = (
        '{"type": "object", "properties": {"rankings": {"type": "array", "items": {"type": "object", '
        '"properties": {"id": {"type": "integer"}, "score": {"type": "number"}}}}}}'
    )
    client.force_login(viewer)

    html = _audit(client, schema, **_htmx()).content.decode()

    assert "No problem found" in html
    assert "a JSON Schema" in html


@pytest.mark.django_db
def test_invalid_json_gets_a_clear_error(client, viewer, catalog):
    client.force_login(viewer)

    htmx = _audit(client, '{"rankings": [', **_htmx())
    plain = _audit(client, "not json")
    empty = _audit(client, "", **_htmx())

    assert htmx.status_code == 200  # htmx swaps only 2xx: the partial says what is wrong
    assert "This is not valid JSON: Expecting value at line 1, column 15." in htmx.content.decode()
    assert plain.status_code == 400
    assert "<html" in plain.content.decode()
    assert "This is not valid JSON" in plain.content.decode()
    assert "Paste a JSON Schema or an example JSON answer first." in empty.content.decode()


@pytest.mark.django_db
def test_without_htmx_the_audit_answers_with_a_page_holding_the_form(client, viewer, catalog):
    client.force_login(viewer)

    response = _audit(client, '{"rankings": []}')

    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert "Missing required fields (2)" in html  # the id and the score of each ranking


@pytest.mark.django_db
def test_the_audit_uses_the_version_the_page_shows(client, viewer, catalog):
    (doc,) = [d for d in contract_catalog.parse(contracts.CATALOG.read_text(encoding="utf-8")) if d.name == RANKING]
    doc.rows = doc.rows[:2]  # version 2 keeps `rankings` and `rankings[*].id`: the score is optional
    contracts.save_contract(doc, actor=SYSTEM)
    client.force_login(viewer)
    url = reverse("contracts:contract-spec-audit", args=[RANKING])

    older = client.post(url, {"document": '{"rankings": [{"id": 7}]}', "version": 1}, **_htmx()).content.decode()
    current = client.post(url, {"document": '{"rankings": [{"id": 7}]}'}, **_htmx()).content.decode()

    assert "against version 1" in older
    assert "Missing required fields (1)" in older
    assert "against version 2" in current
    assert "No problem found" in current


@pytest.mark.django_db
def test_the_spec_audit_post_is_refused_without_a_csrf_token(viewer, catalog):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(viewer)
    page = browser.get(reverse("contracts:contract-detail", args=[RANKING]))
    token = page.context["csrf_token"]

    refused = _audit(browser, "{}", **_htmx())
    accepted = _audit(browser, "{}", **_htmx(HTTP_X_CSRFTOKEN=str(token)))

    assert refused.status_code == 403
    assert accepted.status_code == 200
    assert 'name="csrfmiddlewaretoken"' in page.content.decode()  # the form works without htmx too
    assert 'hx-post="' in page.content.decode()


@pytest.mark.django_db
def test_the_spec_audit_answers_post_only(client, viewer, catalog):
    client.force_login(viewer)

    assert client.get(reverse("contracts:contract-spec-audit", args=[RANKING])).status_code == 405


# --- Admin ---------------------------------------------------------------------------------------


def _change_form(admin_client: Client, contract: Contract) -> tuple[str, dict[str, str]]:
    """The change page and what its form posts back unchanged (the inline's management form...)."""
    html = admin_client.get(reverse("admin:governance_contract_change", args=[contract.pk])).content.decode()
    hidden = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html))
    hidden.pop("csrfmiddlewaretoken", None)
    return html, hidden


@pytest.mark.django_db
def test_editing_as_markdown_in_the_admin_stores_version_2_and_keeps_version_1(admin_client, catalog):
    first = contracts.current(RANKING)
    before = (first.content_sha256, first.notes, list(first.fields.values_list("path_text", "type_text")))
    html, data = _change_form(admin_client, first)
    markdown = contracts.render(first)
    assert "Edit as Markdown" in html
    assert "identifiant numérique existant" in html  # the textarea holds the rendered contract
    edited = markdown.replace("| `rankings[*].rank` | entier |", "| `rankings[*].rank` | entier ∈ [1, 50] |")
    assert edited != markdown

    response = admin_client.post(
        reverse("admin:governance_contract_change", args=[first.pk]), {**data, "markdown": edited}, follow=True
    )

    second = contracts.current(RANKING)
    assert second.version == 2
    assert response.redirect_chain[-1][0] == reverse("admin:governance_contract_change", args=[second.pk])
    assert f"Saved {RANKING} as version 2; version 1 is kept as it was." in response.content.decode()
    assert second.fields.get(path="rankings[*].rank").constraints == {"minimum": 1, "maximum": 50}
    assert second.created_by == "user:admin"
    first.refresh_from_db()
    assert not first.is_current
    assert (first.content_sha256, first.notes, list(first.fields.values_list("path_text", "type_text"))) == before


@pytest.mark.django_db
def test_saving_the_same_markdown_stores_no_version(admin_client, catalog):
    first = contracts.current(RANKING)
    _, data = _change_form(admin_client, first)

    response = admin_client.post(
        reverse("admin:governance_contract_change", args=[first.pk]),
        {**data, "markdown": contracts.render(first)},
        follow=True,
    )

    assert "Nothing to save" in response.content.decode()
    assert list(Contract.objects.filter(name=RANKING).values_list("version", flat=True)) == [1]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda md: md.replace("| nombre |", "| nombre | extra |"), "a field row has 4 cells"),
        (lambda md: md.replace("| entier |", "| quaternion |"), "Row 6 (`rankings[*].rank`)"),
        (lambda md: md.replace(f"`{RANKING}`", "`another_name`"), "Renaming is not an edit"),
        (
            lambda md: (
                md + "\n### `second` — `x.py`\n\n| Champ | Type attendu | Obligatoire | Effet runtime |\n"
                "| --- | --- | --- | --- |\n| `a` | `str` | Oui | x |\n"
            ),
            "Write exactly one contract here",
        ),
        (lambda md: "no contract here", "Write exactly one contract here; this text holds 0"),
    ],
)
def test_markdown_mistakes_come_back_as_form_errors(admin_client, catalog, change, error):
    first = contracts.current(RANKING)
    _, data = _change_form(admin_client, first)

    response = admin_client.post(
        reverse("admin:governance_contract_change", args=[first.pk]),
        {**data, "markdown": change(contracts.render(first))},
    )

    assert response.status_code == 200
    assert error in response.content.decode()
    assert Contract.objects.filter(name=RANKING).count() == 1


@pytest.mark.django_db
def test_an_older_version_is_read_only_in_the_admin(admin_client, catalog):
    (doc,) = [d for d in contract_catalog.parse(contracts.CATALOG.read_text(encoding="utf-8")) if d.name == RANKING]
    doc.notes.append("Remarque: v2.")
    contracts.save_contract(doc, actor=SYSTEM)
    first = Contract.objects.get(name=RANKING, version=1)
    url = reverse("admin:governance_contract_change", args=[first.pk])

    html = admin_client.get(url).content.decode()
    response = admin_client.post(url, {"markdown": contracts.render(first)})

    assert "<textarea" not in html
    assert "<pre>## Mémoire" in html
    assert response.status_code == 403
    assert Contract.objects.filter(name=RANKING).count() == 2


@pytest.mark.django_db
def test_the_admin_lists_contracts_checks_and_stats_read_only(admin_client, audited):
    contract_list = admin_client.get(reverse("admin:governance_contract_changelist"), {"q": "ranking"})
    checks = admin_client.get(reverse("admin:governance_contractcheck_changelist"), {"compliant__exact": "0"})
    one = ContractCheck.objects.filter(compliant=False).first()

    assert RANKING in contract_list.content.decode()
    assert INTENT not in contract_list.content.decode()
    assert "By section" in contract_list.content.decode()
    assert checks.status_code == 200
    assert "By source" in checks.content.decode()
    assert admin_client.get(reverse("admin:governance_contractcheck_change", args=[one.pk])).status_code == 200
    assert admin_client.get(reverse("admin:governance_contractdailystat_changelist")).status_code == 200
    assert admin_client.get(reverse("admin:governance_contractviolationstat_changelist")).status_code == 200
    assert admin_client.get(reverse("admin:governance_contract_add")).status_code == 403
    assert admin_client.get(reverse("admin:governance_contractcheck_add")).status_code == 403
    stat = ContractDailyStat.objects.first()
    response = admin_client.post(reverse("admin:governance_contractdailystat_change", args=[stat.pk]), {"checks": 0})
    assert response.status_code == 403


@pytest.mark.django_db
def test_a_viewer_with_admin_access_reads_the_markdown_without_a_textarea(client, catalog):
    staff = UserFactory(username="vera", roles=["Viewer"])
    staff.is_staff = True
    staff.save()
    client.force_login(staff)
    contract = contracts.current(RANKING)

    html = client.get(reverse("admin:governance_contract_change", args=[contract.pk])).content.decode()

    assert "<textarea" not in html
    assert "<pre>## Mémoire" in html


# --- Demo ----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_demo_audits_two_weeks_of_outputs_once():
    for agent_id in contract_demo.DEMO_AGENTS:
        AgentFactory(agent_id=agent_id)
    out = io.StringIO()

    contract_demo.load(out)
    checks = ContractCheck.objects.count()
    contract_demo.load(out)

    assert Contract.objects.filter(is_current=True).count() == 70
    assert 2000 < checks == ContractCheck.objects.count()
    assert ContractDailyStat.objects.aggregate(n=Sum("checks"))["n"] == checks
    assert ContractDailyStat.objects.dates("day", "day").count() == contract_demo.DAYS
    labels = set(ContractDailyStat.objects.values_list("agent_label", flat=True))
    assert labels == set(contract_demo.DEMO_AGENTS)
    worst = contracts.ranking("contract_name")[0]
    assert worst["contract_name"] == RANKING
    top = contracts.stats(contract_name=RANKING).top_paths[0]
    assert (top["path"], top["code"]) == ("rankings[*].id", "wrong_type")
    codes = set(ContractViolationStat.objects.values_list("code", flat=True))
    assert {"wrong_type", "out_of_range", "missing_required", "not_in_enum"} <= codes
    assert "Demo contract checks: " in out.getvalue()
    assert out.getvalue().count("Demo contract checks: ") == 1


@pytest.mark.django_db
def test_the_demo_imports_the_catalog_even_without_agents():
    out = io.StringIO()

    contract_demo.load(out)

    assert Contract.objects.count() == 70
    assert not ContractCheck.objects.exists()
    assert "skipped" in out.getvalue()


def test_default_window_is_thirty_days_including_today():
    from governance.contracts.reports import default_since

    assert default_since(date(2026, 3, 31)) == date(2026, 3, 2)
